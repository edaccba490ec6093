import { execFile } from "node:child_process";
import { access, cp, mkdir, mkdtemp, readdir, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { promisify } from "node:util";
import { isSupportedNode, SUPPORTED_NODE_RANGE } from "@gstack/contracts/node-support";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { packPlugin, pluginPackageDir } from "./openclaw-world";

const run = promisify(execFile);
const commands = [
  "gstack-dispatch",
  "gstack-handoff",
  "gstack-activity",
  "gstack-learnings",
  "gstack-routing",
];
let folder: string;
let prefix: string;
let tarball: string;

// The steps of `./dev install --prefix DIR` on a machine with a supported Node: pack the one
// bundled package and install the tarball into a fresh prefix, nothing fetched from the registry.
beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), "gstack-install-"));
  prefix = join(folder, "prefix");
  tarball = await packPlugin(join(folder, "pack"));
  await run(
    join(pluginPackageDir, "..", "..", "scripts", "install-prefix.sh"),
    ["--tarball", tarball, "--prefix", prefix],
    { env: { ...process.env, npm_config_cache: join(folder, "npm-cache") } },
  );
});

afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

describe("installing from the checkout into a fresh prefix", () => {
  it("puts every command the bridge skill needs on the prefix's bin, each one working", async () => {
    const installed = await readdir(join(prefix, "bin"));
    expect(installed.sort()).toEqual([...commands].sort());
    for (const command of commands) {
      const { stdout } = await run(join(prefix, "bin", command), ["--help"], {
        env: { ...process.env, NO_COLOR: "1" },
      });
      expect(stdout).toContain(`USAGE ${command}`);
    }
  });

  // The bundle splits shared code into chunks that commands load on first use, so
  // `--help` alone would not notice a chunk missing from the tarball.
  it("runs a real command of each, loading the chunks it needs from the installed package", async () => {
    const home = join(folder, "gstack-home");
    const env = { ...process.env, NO_COLOR: "1", GSTACK_HOME: home };
    const runIt = (command: string, args: string[]) =>
      run(join(prefix, "bin", command), args, { env }).then(({ stdout, stderr }) => stdout + stderr);
    expect(await runIt("gstack-dispatch", ["status"])).toContain("daemon not running");
    expect(await runIt("gstack-activity", ["week"])).toContain("No entries.");
    expect(await runIt("gstack-handoff", ["list"])).toContain("no handoffs");
    expect(
      JSON.parse(await runIt("gstack-learnings", ["search", "--project", "acme-widget", "--json", "x"])),
    ).toEqual({
      results: [],
      withheld: [],
      warnings: [],
    });
    expect(await runIt("gstack-routing", ["check"])).toContain("no routing configuration found");
  });

  // zod and yaml are files of their own in the tarball (dist/vendor/), required by the
  // package's own name on first use: a command that needs neither must not read them.
  it("loads zod and yaml from the installed package only for a command that needs them", async () => {
    const root = join(folder, "routing-root");
    await mkdir(root, { recursive: true });
    await writeFile(
      join(root, "routing.yaml"),
      "routes:\n  - match: { tsk_type: security }\n    skills: [x]\n",
    );
    const hook = join(folder, "record-vendor.mjs");
    await writeFile(
      hook,
      [
        'import { registerHooks } from "node:module";',
        "const seen = new Set();",
        "registerHooks({ load(url, context, next) { const m = /\\/vendor\\/(\\w+)\\.js$/.exec(url); if (m) seen.add(m[1]); return next(url, context); } });",
        'process.on("exit", () => process.stderr.write("vendor: " + [...seen].sort().join(",") + "\\n"));',
      ].join("\n"),
    );
    const env = {
      ...process.env,
      NO_COLOR: "1",
      GSTACK_HOME: join(folder, "gstack-home"),
      NODE_OPTIONS: `--import ${hook}`,
    };
    const vendorOf = async (command: string, args: string[]) => {
      const result = await run(join(prefix, "bin", command), args, { env }).catch(
        (error: { stdout: string; stderr: string }) => error,
      );
      return { output: result.stdout + result.stderr, vendor: /vendor: (.*)/.exec(result.stderr)?.[1] };
    };
    expect((await vendorOf("gstack-activity", ["--help"])).vendor).toBe("");
    expect((await vendorOf("gstack-activity", ["week"])).vendor).toBe("");
    const checked = await vendorOf("gstack-routing", ["check", "--root", root]);
    expect(checked.output).toContain('has unknown key(s) "tsk_type" (line 2, column 14)');
    expect(checked.vendor).toBe("yaml,zod");
  });

  // The service files start the installed command again: its path must exist after install.
  it("writes a systemd unit and a Clawvisor service.yaml that start the installed command", async () => {
    const env = { ...process.env, NO_COLOR: "1", GSTACK_HOME: join(folder, "gstack-home"), HOME: folder };
    const dispatch = join(prefix, "bin", "gstack-dispatch");
    const unit = (await run(dispatch, ["install", "--dry-run", "--platform", "linux"], { env })).stdout;
    const execStart = /^ExecStart=(.*)$/m.exec(unit)?.[1] ?? "";
    const manifest = (await run(dispatch, ["install", "--clawvisor", "--dry-run"], { env })).stdout;
    const start = /^start:\n {2}- (.+)\n {2}- (.+)\n {2}- clawvisor-serve$/m.exec(manifest);
    const script = start?.[2] ?? "";
    expect(script).toBe(await realpath(dispatch));
    await access(script);
    expect(execStart).toContain(script);
    // And the command it names is the daemon's, answering as one.
    const { stdout } = await run(start?.[1] ?? "node", [script, "--help"], { env });
    expect(stdout).toContain("clawvisor-serve");
  });
});

/** A Node.js older than the supported range on this machine's PATH (e.g. Debian's Node 20), if any. */
async function findOldNode(): Promise<string | undefined> {
  const { stdout } = await run("sh", ["-c", "which -a node || true"]);
  for (const node of stdout.split("\n").filter(Boolean)) {
    const version = await run(node, ["-p", "process.versions.node"]).then(
      ({ stdout: out }) => out.trim(),
      () => "",
    );
    if (version && !isSupportedNode(version)) return node;
  }
  return undefined;
}

// `./dev install` on a machine whose own Node is too old: the toolchain's Node is copied under
// the prefix and the commands start it, so they (and the service unit) outlive the checkout.
describe("installing with its own Node.js, for a machine whose Node is too old", async () => {
  const oldNode = await findOldNode();
  let ownPrefix: string;
  // Only the machine's old Node and the system tools, as a user's login shell would have.
  let oldPath: string;

  beforeAll(async () => {
    if (!oldNode) return;
    ownPrefix = join(folder, "own-node-prefix");
    const toolchain = join(folder, "toolchain-copy");
    await cp(dirname(dirname(process.execPath)), toolchain, { recursive: true });
    await run(join(pluginPackageDir, "..", "..", "scripts", "install-prefix.sh"), [
      "--tarball",
      tarball,
      "--prefix",
      ownPrefix,
      "--runtime",
      toolchain,
    ]);
    await rm(toolchain, { recursive: true, force: true });
    oldPath = [dirname(oldNode), "/usr/bin", "/bin"].join(delimiter);
  });

  it.skipIf(!oldNode)("runs every command with the copied runtime after the source is deleted", async () => {
    const installed = await readdir(join(ownPrefix, "bin"));
    expect(installed.sort()).toEqual([...commands].sort());
    const env = { HOME: folder, PATH: oldPath, NO_COLOR: "1", GSTACK_HOME: join(folder, "own-home") };
    for (const command of commands) {
      const { stdout } = await run(join(ownPrefix, "bin", command), ["--help"], { env });
      expect(stdout).toContain(`USAGE ${command}`);
    }
    expect((await run(join(ownPrefix, "bin", "gstack-dispatch"), ["status"], { env })).stdout).toContain(
      "daemon not running",
    );
  });

  it.skipIf(!oldNode)("writes a service unit that starts the Node under the prefix", async () => {
    const env = { HOME: folder, PATH: oldPath, NO_COLOR: "1", GSTACK_HOME: join(folder, "own-home") };
    const unit = (
      await run(join(ownPrefix, "bin", "gstack-dispatch"), ["install", "--dry-run", "--platform", "linux"], {
        env,
      })
    ).stdout;
    const execStart = /^ExecStart=(\S+) (\S+) run$/m.exec(unit);
    expect(execStart?.[1]).toBe(join(ownPrefix, "lib", "gstack", "node", "bin", "node"));
    expect(execStart?.[2]).toBe(
      join(
        ownPrefix,
        "lib",
        "node_modules",
        "@gstack",
        "openclaw-plugin",
        "dist",
        "bin",
        "gstack-dispatch.js",
      ),
    );
  });

  it.skipIf(!oldNode)("refuses the machine's old Node in one line naming the version needed", async () => {
    const bin = join(prefix, "lib", "node_modules", "@gstack", "openclaw-plugin", "dist", "bin");
    for (const command of commands) {
      const failure = await run(oldNode as string, [join(bin, `${command}.js`), "--help"]).then(
        () => undefined,
        (error: { code: number; stdout: string; stderr: string }) => error,
      );
      expect(failure?.code).toBe(1);
      expect(failure?.stdout).toBe("");
      const lines = (failure?.stderr ?? "").split("\n").filter(Boolean);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        new RegExp(`^${command}: needs Node\\.js ${SUPPORTED_NODE_RANGE}, but this is Node\\.js \\d+\\.`),
      );
      expect(lines[0]).toContain("https://nodejs.org");
    }
  });
});

import { execFile } from "node:child_process";
import { access, mkdir, mkdtemp, readdir, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { packPlugin } from "./openclaw-world";

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

// The steps of `./dev install --prefix DIR`: pack the one bundled package and install the
// tarball globally into a fresh prefix with npm, with nothing fetched from the registry.
beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), "gstack-install-"));
  prefix = join(folder, "prefix");
  const tarball = await packPlugin(join(folder, "pack"));
  await run(
    "npm",
    [
      "install",
      "--global",
      "--prefix",
      prefix,
      "--omit=peer",
      "--offline",
      "--no-audit",
      "--no-fund",
      tarball,
    ],
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

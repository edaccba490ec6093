import { execFile } from "node:child_process";
import {
  access,
  cp,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rm,
  symlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { promisify } from "node:util";
import { isSupportedNode, SUPPORTED_NODE_RANGE } from "@gstack/contracts/node-support";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadBudget } from "../../../vitest.load-budget";
import { packPlugin, pluginPackageDir } from "./openclaw-world";

const run = promisify(execFile);
const commands = [
  "gstack-dispatch",
  "gstack-handoff",
  "gstack-activity",
  "gstack-learnings",
  "gstack-routing",
  "gstack-openclaw-gen",
  "gstack-bridge-skill",
  "gstack-brief",
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
  // Each command's `--help` runs below, where its colour is checked (a node process apiece).
  it("puts every command the README names on the prefix's bin", async () => {
    const installed = await readdir(join(prefix, "bin"));
    expect(installed.sort()).toEqual([...commands].sort());
  });

  it("ships the published JSON Schemas, byte for byte", async () => {
    const shipped = join(prefix, "lib", "node_modules", "@gstack", "openclaw-plugin", "dist", "schemas");
    const published = join(pluginPackageDir, "..", "..", "schemas");
    const names = (await readdir(published)).filter((name) => name.endsWith(".schema.json")).sort();
    expect(names).toContain("dispatch.schema.json");
    expect((await readdir(shipped)).sort()).toEqual(names);
    for (const name of names) {
      expect(await readFile(join(shipped, name), "utf8"), name).toBe(
        await readFile(join(published, name), "utf8"),
      );
    }
  });

  it("each command works: writes its help without colour codes to a pipe, and with NO_COLOR set to any value", async () => {
    // The help renderer leaves colour off by itself under CI, TEST (which the test runner sets)
    // or a dumb terminal, so the commands run here without them: only the pipe can turn it off.
    const { NO_COLOR: _, FORCE_COLOR: __, TEST: ___, CI: ____, ...rest } = process.env;
    const plain = { ...rest, TERM: "xterm-256color" };
    for (const command of commands) {
      const piped = await run(join(prefix, "bin", command), ["--help"], { env: plain });
      expect(piped.stdout).toContain(`USAGE ${command}`);
      expect(piped.stdout).not.toContain("\u001b[");
      const told = await run(join(prefix, "bin", command), ["--help"], {
        env: { ...plain, NO_COLOR: "true" },
      });
      expect(told.stdout).toContain(`USAGE ${command}`);
      expect(told.stdout).not.toContain("\u001b[");
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
    // The bridge skill's installer finds the skill files shipped beside the bundle.
    const workspace = join(folder, "openclaw-workspace");
    const installed = JSON.parse(
      await runIt("gstack-bridge-skill", ["install", "--workspace", workspace, "--json"]),
    );
    expect(installed.path).toBe(join(workspace, "skills", "gstack-bridge"));
    await access(join(workspace, "skills", "gstack-bridge", "SKILL.md"));
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

  // A fresh HOME with no user bus: systemd refuses, as on a server where nobody is logged in.
  function noBusEnv(home: string) {
    return {
      ...process.env,
      NO_COLOR: "1",
      HOME: home,
      XDG_CONFIG_HOME: join(home, ".config"),
      // Node's compile cache, which every gstack command keeps, goes outside the home whose
      // emptiness the refusal is judged by.
      XDG_CACHE_HOME: join(folder, "refused-cache"),
      XDG_RUNTIME_DIR: join(home, "no-runtime"),
      DBUS_SESSION_BUS_ADDRESS: `unix:path=${join(home, "no-runtime", "bus")}`,
      GSTACK_HOME: join(home, ".gstack"),
    };
  }

  it("exits non-zero with systemd's words when it refuses, and writes nothing", async () => {
    const home = join(folder, "refused-home");
    await mkdir(join(home, "no-runtime"), { recursive: true });
    const failure = await run(join(prefix, "bin", "gstack-dispatch"), ["install", "--platform", "linux"], {
      env: noBusEnv(home),
    }).then(
      () => undefined,
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect(failure?.code).toBe(1);
    expect(failure?.stderr).toMatch(
      /gstack-dispatch: systemd refused: .* said: Failed to connect to (the )?bus/i,
    );
    expect(failure?.stdout).toBe("");
    expect(await readdir(home)).toEqual(["no-runtime"]);
  });

  it("doctor names each problem with its fix, and says when it is fixed", async () => {
    const home = join(folder, "doctor-home");
    const state = join(home, ".gstack");
    const repo = join(home, "acme-widget");
    await mkdir(state, { recursive: true });
    await run("git", ["init", "-q", repo]);
    await writeFile(
      join(state, "config.yaml"),
      `dispatch:\n  trusted_repos:\n    - ${repo}\n    - ${join(home, "gone")}\n`,
    );
    await writeFile(join(state, ".dispatch-secret"), "s".repeat(40), { mode: 0o644 });
    // This prefix's commands start the `node` on PATH; no agent CLI is on it.
    const path = [dirname(process.execPath), "/usr/bin", "/bin"].join(delimiter);
    const env = { ...process.env, NO_COLOR: "1", HOME: home, GSTACK_HOME: state, PATH: path };
    const doctor = () =>
      run(join(prefix, "bin", "gstack-dispatch"), ["doctor", "--json", "--platform", "linux"], { env }).then(
        ({ stdout }) => ({ code: 0, stdout }),
        (error: { code: number; stdout: string }) => error,
      );
    const first = await doctor();
    expect(first.code).toBe(1);
    const report = JSON.parse(first.stdout) as {
      ok: boolean;
      checks: Array<{ name: string; status: string; detail: string; fix?: string }>;
    };
    const byName = new Map(report.checks.map((check) => [check.name, check]));
    expect(report.ok).toBe(false);
    expect(byName.get("node")?.status).toBe("ok");
    expect(byName.get("config")?.status).toBe("ok");
    expect(byName.get(`trusted:${join(home, "gone")}`)).toMatchObject({
      status: "fail",
      detail: "does not exist",
    });
    expect(byName.get("secret:.dispatch-secret")).toMatchObject({
      status: "fail",
      fix: `chmod 600 ${join(state, ".dispatch-secret")}`,
    });
    expect(byName.get("daemon")).toMatchObject({ status: "warn" });
    expect(byName.get("service")).toMatchObject({ status: "warn", fix: "gstack-dispatch install" });
    for (const check of report.checks) {
      if (check.status === "fail" || check.status === "warn") expect(check.fix).toMatch(/^[^\n]+$/);
    }
    await run("chmod", ["600", join(state, ".dispatch-secret")]);
    const second = JSON.parse((await doctor()).stdout) as typeof report;
    expect(second.checks.find((check) => check.name === "secret:.dispatch-secret")?.status).toBe("ok");
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
  }, loadBudget(240_000));

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

  // Last, since it removes what the tests above ran: service files, commands, the runtime.
  it.skipIf(!oldNode)(
    "uninstall removes the service, the commands and the runtime, and keeps the state",
    async () => {
      const home = join(folder, "uninstall-home");
      const units = join(home, ".config", "systemd", "user");
      await mkdir(join(units, "default.target.wants"), { recursive: true });
      await mkdir(join(home, "no-runtime"), { recursive: true });
      await writeFile(join(units, "gstack-dispatch.service"), "[Unit]\nDescription=gstack\n");
      await symlink(
        join(units, "gstack-dispatch.service"),
        join(units, "default.target.wants", "gstack-dispatch.service"),
      );
      const state = join(home, ".gstack");
      await mkdir(join(state, "dispatch", "completed"), { recursive: true });
      await writeFile(join(state, "config.yaml"), "dispatch: {}\n");
      const env = {
        HOME: home,
        PATH: oldPath,
        NO_COLOR: "1",
        GSTACK_HOME: state,
        XDG_RUNTIME_DIR: join(home, "no-runtime"),
        DBUS_SESSION_BUS_ADDRESS: `unix:path=${join(home, "no-runtime", "bus")}`,
      };
      const { stdout } = await run(
        join(ownPrefix, "bin", "gstack-dispatch"),
        ["uninstall", "--platform", "linux"],
        {
          env,
        },
      );
      expect(stdout).toContain(`removed ${join(units, "gstack-dispatch.service")}`);
      expect(stdout).toContain(`kept ${state}`);
      expect(await readdir(units)).not.toContain("gstack-dispatch.service");
      expect(await readdir(join(units, "default.target.wants")).catch(() => [])).toEqual([]);
      expect(await readdir(join(ownPrefix, "bin"))).toEqual([]);
      expect(await readdir(join(ownPrefix, "lib"))).not.toContain("gstack");
      expect(await readdir(join(ownPrefix, "lib", "node_modules"))).not.toContain("@gstack");
      expect(await readdir(join(ownPrefix, "share")).catch(() => [])).not.toContain("gstack");
      expect(await readdir(join(state, "dispatch"))).toEqual(["completed"]);
    },
  );
});

#!/usr/bin/env node
import { execFile } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ContractError, gstackLayout, resolveGstackHome } from "@gstack/contracts";
import { defineCommand, runMain } from "citty";
import { Daemon } from "./daemon";
import { DaemonError } from "./errors";
import {
  renderLaunchdPlist,
  renderSystemdUnit,
  SERVICE_LABEL,
  type ServiceSpec,
  SYSTEMD_UNIT,
} from "./service-unit";
import { loadSettings } from "./settings";
import { formatStatus, readStatus } from "./status";
import { dispatchPhase, requestCancel, submitDispatch } from "./submit";
import { readDispatchSecret } from "./token";

const rootArg = {
  root: { type: "string", description: "gstack state root (default: GSTACK_HOME, else ~/.gstack)" },
} as const;

function layoutOf(args: { root?: string | undefined }) {
  return gstackLayout(args.root ? resolve(args.root) : resolveGstackHome(process.env));
}

/** Prints one readable line and exits non-zero. */
function fail(error: unknown): never {
  const message = ContractError.isInstance(error)
    ? error.message
    : DaemonError.isInstance(error)
      ? error.message
      : (error as Error).message;
  // One line, as promised: a message over several lines (one per issue) is joined.
  const line = message
    .split("\n")
    .map((part) => part.trim())
    .filter(Boolean)
    .join("; ");
  process.stderr.write(`gstack-dispatch: ${line}\n`);
  process.exit(DaemonError.isInstance(error) ? error.exitCode : 1);
}

function timestamped(line: string): void {
  process.stdout.write(`${new Date().toISOString().slice(11, 19)}  ${line}\n`);
}

const run = defineCommand({
  meta: { name: "run", description: "Run the daemon in the foreground (what launchd/systemd start)" },
  args: { ...rootArg },
  async run({ args }) {
    const daemon = new Daemon({ root: layoutOf(args).root, log: timestamped });
    try {
      await daemon.start();
    } catch (error) {
      fail(error);
    }
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      signals += 1;
      if (signals > 1) {
        timestamped(`${signal} again: cancelling running sessions now`);
        void daemon.stop(0);
        return;
      }
      timestamped(
        `${signal}: finishing running sessions (up to ${daemon.settings.shutdown_grace_seconds} s)`,
      );
      void daemon.stop();
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
    await daemon.stopped;
    process.exit(0);
  },
});

const status = defineCommand({
  meta: { name: "status", description: "Show running and queued dispatches with live progress" },
  args: { ...rootArg, json: { type: "boolean", description: "print the list-sessions response as JSON" } },
  async run({ args }) {
    try {
      const current = await readStatus(layoutOf(args));
      process.stdout.write(
        args.json ? `${JSON.stringify(current.sessions, null, 2)}\n` : `${formatStatus(current)}\n`,
      );
    } catch (error) {
      fail(error);
    }
  },
});

const submit = defineCommand({
  meta: {
    name: "submit",
    description: "Hand a dispatch file to the daemon (validated, signed when a secret exists)",
  },
  args: { ...rootArg, file: { type: "positional", description: "dispatch JSON file", required: true } },
  async run({ args }) {
    try {
      const layout = layoutOf(args);
      const text = await readFile(args.file, "utf8");
      let document: Record<string, unknown>;
      try {
        document = JSON.parse(text) as Record<string, unknown>;
      } catch (error) {
        throw new DaemonError(`${args.file} is not valid JSON: ${(error as Error).message}`);
      }
      const secret = await readDispatchSecret(layout);
      const { path, dispatch } = await submitDispatch(layout, document, secret ? { secret } : {});
      process.stdout.write(`submitted ${dispatch.id}${secret ? " (signed)" : ""} → ${path}\n`);
    } catch (error) {
      fail(error);
    }
  },
});

const cancel = defineCommand({
  meta: {
    name: "cancel",
    description: "Cancel a queued or running dispatch (its whole process group is stopped)",
  },
  args: {
    ...rootArg,
    id: { type: "positional", description: "dispatch id", required: true },
    wait: { type: "string", description: "seconds to wait for the report (default 15, 0 to return at once)" },
  },
  async run({ args }) {
    try {
      const layout = layoutOf(args);
      layout.dispatch.claimedFile(args.id);
      // Checked twice: a dispatch being claimed is briefly in neither place.
      let phase = await dispatchPhase(layout, args.id);
      if (phase === undefined) {
        await new Promise((done) => setTimeout(done, 200));
        phase = await dispatchPhase(layout, args.id);
      }
      if (phase === undefined) throw new DaemonError(`no queued or running dispatch ${args.id}`);
      await requestCancel(layout, args.id);
      const waitSeconds = Number(args.wait ?? 15);
      const deadline = Date.now() + waitSeconds * 1000;
      while (Date.now() < deadline) {
        try {
          const completion = JSON.parse(await readFile(layout.dispatch.completedJson(args.id), "utf8")) as {
            status: string;
          };
          process.stdout.write(
            `${args.id}: ${completion.status} → ${layout.dispatch.completedReport(args.id)}\n`,
          );
          return;
        } catch {}
        await new Promise((done) => setTimeout(done, 200));
      }
      process.stdout.write(`cancel requested for ${args.id}\n`);
    } catch (error) {
      fail(error);
    }
  },
});

function execQuiet(program: string, args: string[]): Promise<string | undefined> {
  return new Promise((done) =>
    execFile(program, args, (error, stdout) => done(error ? undefined : stdout.trim())),
  );
}

/** The built cli.js (also when this command runs from source during development). */
function installedCliPath(): string {
  const here = fileURLToPath(import.meta.url);
  return here.endsWith(".ts") ? join(dirname(here), "..", "dist", "cli.js") : here;
}

const install = defineCommand({
  meta: {
    name: "install",
    description: "Install the daemon as a launchd agent (macOS) or systemd user service (Linux)",
  },
  args: {
    ...rootArg,
    "dry-run": { type: "boolean", description: "print the unit file instead of installing it" },
    platform: { type: "string", description: "darwin or linux (default: this machine)" },
  },
  async run({ args }) {
    try {
      const layout = layoutOf(args);
      const platform = args.platform ?? process.platform;
      if (platform !== "darwin" && platform !== "linux") {
        throw new DaemonError(`install supports macOS (launchd) and Linux (systemd), not ${platform}`);
      }
      const { settings } = await loadSettings(layout);
      const claude = (await execQuiet("sh", ["-c", "command -v claude"])) || undefined;
      const home = process.env.HOME ?? homedir();
      const spec: ServiceSpec = {
        node: process.execPath,
        cli: installedCliPath(),
        gstackHome: layout.root,
        home,
        ...(claude ? { claude } : {}),
        ...(process.env.PATH ? { path: process.env.PATH } : {}),
        stopTimeoutSeconds: settings.shutdown_grace_seconds + 30,
      };
      const darwin = platform === "darwin";
      const unit = darwin ? renderLaunchdPlist(spec) : renderSystemdUnit(spec);
      const target = darwin
        ? join(home, "Library", "LaunchAgents", `${SERVICE_LABEL}.plist`)
        : join(process.env.XDG_CONFIG_HOME ?? join(home, ".config"), "systemd", "user", SYSTEMD_UNIT);
      if (args["dry-run"]) {
        process.stdout.write(unit);
        process.stderr.write(`(dry run: would write ${target})\n`);
        return;
      }
      if (!claude)
        process.stderr.write(
          "warning: 'claude' is not on PATH; the daemon will refuse to start until it is\n",
        );
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, unit, { mode: 0o644 });
      process.stdout.write(`wrote ${target}\n`);
      const uid = process.getuid?.() ?? 0;
      const steps = darwin
        ? [
            ["launchctl", ["bootout", `gui/${uid}/${SERVICE_LABEL}`]],
            ["launchctl", ["bootstrap", `gui/${uid}`, target]],
          ]
        : [
            ["systemctl", ["--user", "daemon-reload"]],
            ["systemctl", ["--user", "enable", "--now", SYSTEMD_UNIT]],
          ];
      for (const [program, stepArgs] of steps as Array<[string, string[]]>) {
        const ok = (await execQuiet(program, stepArgs)) !== undefined;
        process.stdout.write(`${ok ? "ran" : "could not run"}: ${program} ${stepArgs.join(" ")}\n`);
      }
      if (!darwin)
        process.stdout.write("to keep it running after you log out: loginctl enable-linger $USER\n");
    } catch (error) {
      fail(error);
    }
  },
});

const demo = defineCommand({
  meta: {
    name: "demo",
    description: "Run one dispatch end to end offline (real Claude Code CLI, scripted model)",
  },
  args: { keep: { type: "boolean", description: "keep the temporary folder" } },
  async run({ args }) {
    const { runDemo } = await import("./demo");
    try {
      const ok = await runDemo({ keep: Boolean(args.keep), out: (text) => process.stdout.write(text) });
      process.exit(ok ? 0 : 1);
    } catch (error) {
      fail(error);
    }
  },
});

const main = defineCommand({
  meta: { name: "gstack-dispatch", version: "0.1.0", description: "The gstack dispatch daemon" },
  subCommands: { run, status, submit, cancel, install, demo },
});

void runMain(main);

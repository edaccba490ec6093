import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { OpenClawGateway, OpenClawHome } from "@gstack/openclaw-testbed";
import {
  type RecordedRequest,
  type ScriptedModel,
  scripted,
  startScriptedModel,
} from "@gstack/scripted-model";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { DISPATCH_MARKER, newestUserText } from "./openclaw-scripts";
import { agentTurn, type GstackWorld, pluginPackageDir, sessionHistory, waitFor } from "./openclaw-world";
import type { SharedGateway } from "./real-gateway-world";
import { reportMarker } from "./report-outbox";

const repoRoot = join(pluginPackageDir, "..", "..");
/** The real Claude Code CLI the daemon's own end-to-end tests use. */
const claude = join(repoRoot, "apps", "daemon", "node_modules", ".bin", "claude");
/** The built daemon package, loaded by a separate process that can be killed with -9. */
const daemonModule = pathToFileURL(join(repoRoot, "apps", "daemon", "dist", "index.js")).href;

let world: GstackWorld;
let model: ScriptedModel;
let home: OpenClawHome;
let gateway: OpenClawGateway;
const children: ChildProcess[] = [];

interface ChildDaemon {
  child: ChildProcess;
  output: () => string;
  kill9(): Promise<void>;
  stop(): Promise<void>;
}

/** The real daemon in a process of its own, running the real Claude Code CLI against `coder`. */
async function startChildDaemon(coderEnv: Record<string, string>): Promise<ChildDaemon> {
  const options = {
    root: world.root,
    openclawWorkspace: false,
    claudeBinary: claude,
    agentEnv: { ...coderEnv, CLAUDE_CODE_MAX_RETRIES: "0" },
    settings: { trusted_repos: [world.base] },
  };
  const script = `
import { Daemon } from ${JSON.stringify(daemonModule)};
const daemon = new Daemon({ ...${JSON.stringify(options)}, log: (line) => console.log(line) });
await daemon.start();
console.log("child daemon ready");
process.on("SIGTERM", () => void daemon.stop(0).then(() => process.exit(0)));
setInterval(() => {}, 60_000);
`;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`the daemon exited before it was ready:\n${output}`);
      return output.includes("child daemon ready") || undefined;
    },
    60_000,
    "the daemon to be ready",
  );
  return {
    child,
    output: () => output,
    kill9: async () => {
      child.kill("SIGKILL");
      await exited;
    },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}

/** The newest tool result's text in a coder request (what the last command printed). */
function toolResultsOf(request: RecordedRequest): number {
  return request.toolResultCount;
}

/**
 * A coder that adds a file and commits it, answering from how far the conversation has got,
 * so a run that starts over after a crash follows the same steps. `hold` decides whether a
 * request at that step is held open instead (the turn the test kills the daemon in).
 */
async function startCoder(file: string, hold: (request: RecordedRequest) => boolean) {
  return await startScriptedModel({
    respond: (request) => {
      if (hold(request)) return scripted.hang();
      switch (toolResultsOf(request)) {
        case 0:
          return scripted.write(file, `${file}\n`);
        case 1:
          return scripted.bash(`git add ${file}`);
        case 2:
          return scripted.bash(`git commit -m 'Add ${file}'`);
        default:
          return scripted.text(`Added ${file}.\n## What shipped\n- ${file}\n## Needs human judgment\n- none`);
      }
    },
  });
}

async function dispatchFromSession(session: string, task: string): Promise<string> {
  const before = new Set(await readdir(world.layout.dispatch.incoming).catch(() => []));
  const args = { task, project: "acme-widget", project_dir: world.repo };
  const turn = await agentTurn(gateway, session, `Please do this. ${DISPATCH_MARKER}${JSON.stringify(args)}`);
  expect(turn.code, turn.stderr).toBe(0);
  const added = (await readdir(world.layout.dispatch.incoming)).filter(
    (name) => name.endsWith(".json") && !name.startsWith(".") && !before.has(name),
  );
  expect(added).toHaveLength(1);
  const dispatch = JSON.parse(
    await readFile(join(world.layout.dispatch.incoming, added[0] as string), "utf8"),
  );
  return dispatch.id as string;
}

/** After the report was recorded as delivered, one more turn, then count what the session holds. */
async function expectShownOnce(session: string, id: string): Promise<void> {
  const delivered = join(home.stateDir, "gstack", "delivered", `${id}.json`);
  await waitFor(() => stat(delivered).catch(() => undefined), 150_000, `the report of ${id} to be delivered`);
  // A later turn would carry a report still queued twice; it must not.
  const later = await agentTurn(gateway, session, "Anything new?");
  expect(later.code, later.stderr).toBe(0);
  const messages = ((await sessionHistory(gateway, session, 200)).messages ?? []) as {
    role?: string;
    content?: unknown;
  }[];
  // Any report of this dispatch, whatever its outcome or attempt (a run started over after the
  // crash is attempt 2, keyed `gstack:<id>:completed:2`): exactly one may reach the session.
  const marker = reportMarker(`gstack:${id}:`).slice(0, -1);
  const inHistory = messages.filter(
    (message) => message.role === "user" && JSON.stringify(message.content).includes(marker),
  );
  const turns = model.agentRequests().filter((request) => newestUserText(request).includes(marker));
  if (inHistory.length !== 1 || turns.length !== 1)
    console.error(marker, turns.length, JSON.stringify(messages).slice(0, 4000));
  expect(inHistory, "user messages in chat.history carrying the report").toHaveLength(1);
  expect(turns, "agent turns given the report").toHaveLength(1);
}

/** The daemon-crash tests, on the gateway the suites share; the OpenClaw agent answers as scripted. */
export function daemonCrashSuite(shared: SharedGateway): void {
  describe("a daemon killed with -9 while a report is on its way", () => {
    beforeAll(() => {
      shared.respondWith();
      ({ world, model, home, gateway } = shared.real);
    });

    afterEach(async () => {
      for (const child of children.splice(0)) {
        if (child.exitCode === null && child.signalCode === null) {
          const exited = new Promise((resolve) => child.once("exit", resolve));
          child.kill("SIGKILL");
          await exited;
        }
      }
    });

    it("shows the report once when the daemon is killed with -9 while the agent runs", async () => {
      const session = "agent:main:crash-mid-run";
      let holding = true;
      // The first run's first turn is held open until the daemon has been killed.
      const coder = await startCoder("midrun.txt", (request) => holding && toolResultsOf(request) === 0);
      const coderHome = await mkdtemp(join(tmpdir(), "gstack-coder-home-"));
      try {
        const id = await dispatchFromSession(session, "Add midrun.txt and commit it");
        const first = await startChildDaemon(coder.claudeEnv(coderHome));
        await waitFor(() => coder.hangingCount() > 0 || undefined, 120_000, "the agent's turn to be held");
        await first.kill9();
        holding = false;
        const second = await startChildDaemon(coder.claudeEnv(coderHome));
        await waitFor(
          () => stat(world.layout.dispatch.completedJson(id)).catch(() => undefined),
          240_000,
          `${id} to complete after the restart`,
        ).catch((error) => {
          console.error(second.output());
          throw error;
        });
        await expectShownOnce(session, id);
        await second.stop();
      } finally {
        await coder.close();
        await rm(coderHome, { recursive: true, force: true });
      }
    }, 900_000);

    it("shows the report once when the daemon is killed with -9 right after the agent's commit", async () => {
      const session = "agent:main:crash-after-commit";
      let holding = true;
      // The turn after the commit (the agent's closing words) is held until the daemon has been killed.
      const coder = await startCoder("aftercommit.txt", (request) => holding && toolResultsOf(request) >= 3);
      const coderHome = await mkdtemp(join(tmpdir(), "gstack-coder-home-"));
      try {
        const id = await dispatchFromSession(session, "Add aftercommit.txt and commit it");
        const first = await startChildDaemon(coder.claudeEnv(coderHome));
        await waitFor(
          () => coder.hangingCount() > 0 || undefined,
          120_000,
          "the turn after the commit to be held",
        );
        // The commit is made: git's answer to it is what the held turn was given.
        expect(coder.agentRequests().at(-1)?.promptText).toMatch(/1 file changed/);
        await first.kill9();
        holding = false;
        const second = await startChildDaemon(coder.claudeEnv(coderHome));
        await waitFor(
          () => stat(world.layout.dispatch.completedJson(id)).catch(() => undefined),
          240_000,
          `${id} to complete after the restart`,
        ).catch((error) => {
          console.error(second.output());
          throw error;
        });
        await expectShownOnce(session, id);
        await second.stop();
      } finally {
        await coder.close();
        await rm(coderHome, { recursive: true, force: true });
      }
    }, 900_000);
  });
}

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { type DispatchSettings, type GstackLayout, gstackLayout } from "@gstack/contracts";
import { waitUntil } from "../../../vitest.load-budget";
import { bundleName, sourceBundle, sourceCommand } from "../../../vitest.source-bundle";
import { Daemon, type DaemonOptions } from "./daemon";
import { auditLog, type DaemonContext } from "./daemon-context";
import { createCompletionDelivery } from "./deliver/outbox-delivery";

/**
 * A small real agent for tests: reads the prompt, and does what the task line says.
 * `commit NAME` writes NAME and commits it (unless HEAD holds it already); `sleep MS` waits; `hang` starts a child and
 * waits forever; `rate-limit-once` / `too-long-once` fail like Claude Code on attempt 1;
 * `fail` ends with a logic error; `commit-then-fail NAME` commits NAME, then ends with a logic error;
 * `commit-then-rate-limit NAME` commits NAME-{attempt} on each attempt and fails the first as
 * rate-limited. Every prompt is appended to prompts.log beside the state root.
 */
export const TRIVIAL_AGENT = `
const { execFileSync, spawn } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const prompt = process.argv[2] ?? "";
// The test world's folder: beside the state root (the cwd is a worktree under it).
const OUT = process.env.GSTACK_HOME ? path.dirname(process.env.GSTACK_HOME) : path.join(process.cwd(), "..");
const task = (prompt.split("## Task\\n")[1] ?? "").split("\\n")[0];
const attempt = /This is attempt (\\d+)/.exec(prompt)?.[1] ?? "1";
fs.appendFileSync(path.join(OUT, "prompts.log"), JSON.stringify({ id: process.env.GSTACK_DISPATCH_ID, attempt, prompt }) + "\\n");
const [verb, arg] = task.split(" ");
const report = (extra) => console.log("done\\n## What shipped\\n- " + task + "\\n## Decisions made\\n- none\\n## Learnings logged\\n- tool: The repo uses plain node for tests\\n" + (extra ?? "") + "\\n## Needs human judgment\\n- Nothing");
const resultLine = (fields) => console.log(JSON.stringify({ type: "result", subtype: "success", is_error: true, ...fields }));
if (verb === "commit") {
  // A resumed run finds its earlier commit and does not make it again; a file an attempt cut
  // short wrote but never committed is committed now (is it in HEAD's tree?).
  const committed = execFileSync("git", ["ls-tree", "--name-only", "HEAD", "--", arg], { encoding: "utf8" }).trim() !== "";
  if (!committed) {
    if (!fs.existsSync(arg)) fs.writeFileSync(arg, "hello\\n");
    execFileSync("git", ["add", arg]);
    execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "add " + arg]);
  }
  report();
} else if (verb === "sleep-first") {
  const marker = path.join(OUT, "slept-once");
  if (fs.existsSync(marker)) report();
  else {
    fs.writeFileSync(marker, String(process.pid));
    setTimeout(() => report(), Number(arg));
  }
} else if (verb === "sleep") {
  setTimeout(() => report(), Number(arg));
} else if (verb === "hang") {
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  fs.writeFileSync(path.join(OUT, "child.pid"), String(child.pid));
  setInterval(() => {}, 1000);
} else if (verb === "commit-then-rate-limit") {
  // Each attempt commits its own file; the first then fails as rate-limited, so it is retried.
  const name = arg + "-" + attempt;
  fs.writeFileSync(name, "attempt " + attempt + "\\n");
  execFileSync("git", ["add", name]);
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "add " + name]);
  if (attempt === "1") {
    resultLine({ api_error_status: 429, terminal_reason: "api_error", result: "API Error: Request rejected (429)" });
    process.exit(1);
  }
  report();
} else if (verb === "rate-limit-once" && attempt === "1") {
  resultLine({ api_error_status: 429, terminal_reason: "api_error", result: "API Error: Request rejected (429)" });
  process.exit(1);
} else if (verb === "too-long-once" && attempt === "1") {
  resultLine({ api_error_status: 400, terminal_reason: "prompt_too_long", result: "Prompt is too long" });
  process.exit(1);
} else if (verb === "commit-then-fail") {
  fs.writeFileSync(arg, "half done\\n");
  execFileSync("git", ["add", arg]);
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "add " + arg]);
  resultLine({ result: "I could not finish this task" });
  process.exit(1);
} else if (verb === "fail") {
  resultLine({ result: "I cannot do this task" });
  process.exit(1);
} else {
  report();
}
`;

/**
 * Writes the world's `config.yaml` trusting `repos` (the world's folder by default), as a person
 * would: what `land` and `discard` outside the daemon read.
 */
export async function trustInConfig(
  world: TestWorld,
  repos: readonly string[] = [world.base],
): Promise<void> {
  await mkdir(world.root, { recursive: true });
  await writeFile(world.layout.config, `dispatch:\n  trusted_repos: ${JSON.stringify(repos)}\n`);
}

/**
 * Everything in a repository's git folder, each file's content and time of change, and its refs:
 * taken before and after, two equal snapshots show nothing was written to the repository.
 */
export async function repositorySnapshot(repo: string): Promise<Record<string, string>> {
  const gitDir = execFileSync(
    "git",
    ["-C", repo, "rev-parse", "--path-format=absolute", "--git-common-dir"],
    {
      encoding: "utf8",
    },
  ).trim();
  const files: Record<string, string> = {
    refs: execFileSync("git", ["-C", repo, "for-each-ref", "--format=%(refname) %(objectname)"], {
      encoding: "utf8",
    }),
  };
  const walk = async (folder: string): Promise<void> => {
    for (const entry of await readdir(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) await walk(path);
      else {
        const info = await stat(path);
        files[path] = `${info.mtimeMs} ${(await readFile(path)).toString("base64")}`;
      }
    }
  };
  await walk(gitDir);
  return files;
}

/** A temporary state root with a trusted scratch git repository and the trivial agent. */
export interface TestWorld {
  base: string;
  root: string;
  layout: GstackLayout;
  repo: string;
  agentScript: string;
  cleanup(): Promise<void>;
}

/** A git repository at `path` on branch `main`, with one empty commit. */
export function initRepository(path: string): void {
  execFileSync("git", ["init", "-q", "-b", "main", path]);
  execFileSync("git", [
    "-C",
    path,
    "-c",
    "user.name=t",
    "-c",
    "user.email=t@t",
    "commit",
    "-q",
    "--allow-empty",
    "-m",
    "start",
  ]);
}

export async function makeWorld(): Promise<TestWorld> {
  const base = await mkdtemp(join(tmpdir(), "gstack-daemon-"));
  const root = join(base, "state");
  const repo = join(base, "repo");
  initRepository(repo);
  const agentScript = join(base, "agent.cjs");
  await writeFile(agentScript, TRIVIAL_AGENT);
  return {
    base,
    root,
    layout: gstackLayout(root),
    repo,
    agentScript,
    cleanup: () => rm(base, { recursive: true, force: true }),
  };
}

/** A valid dispatch for the world's repository. */
export function dispatchFor(world: TestWorld, id: string, task: string, extra: Record<string, unknown> = {}) {
  return {
    id,
    dispatched_by: "wintermute",
    task,
    project: "acme-widget",
    project_dir: world.repo,
    target_agent: "codex",
    learnings: ["The widget uses tabs"],
    ...extra,
  };
}

/**
 * Polls until `check` returns a value (not undefined). `timeoutMs` is what the wait may take on an
 * idle machine; a loaded one gets more (vitest.load-budget.ts), asked again on every poll.
 */
export async function waitFor<T>(
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 20_000,
): Promise<T> {
  return waitUntil(check, { idleMs: timeoutMs, what: "the awaited state" });
}

/** Reads a completion JSON when it exists. */
export async function completionOf(
  layout: GstackLayout,
  id: string,
): Promise<Record<string, unknown> | undefined> {
  try {
    return JSON.parse(await readFile(layout.dispatch.completedJson(id), "utf8")) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** The audit log's events. */
export async function auditOf(layout: GstackLayout): Promise<Array<Record<string, unknown>>> {
  try {
    return (await readFile(layout.dispatch.audit, "utf8"))
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  } catch {
    return [];
  }
}

const PACKAGE_DIR = join(import.meta.dirname, "..");

/**
 * The arguments for Node that run the `gstack-dispatch` command from this package's source, as
 * `node --import tsx src/cli.ts` would, but from one bundle of it (vitest.source-bundle.ts):
 * `spawn(process.execPath, [...dispatchCommand(), "status", ...])`. Built again only when a source changed.
 */
export function dispatchCommand(): string[] {
  return sourceCommand(PACKAGE_DIR, join(import.meta.dirname, "cli.ts"));
}

/**
 * The `file:` URL of a bundle of one source module (a path from this package's folder, such as
 * `src/worktree/materialize.ts` or `../../packages/daemon-client/src/land/land.ts`), for a
 * script a test writes and runs in a child process to import instead of the module's source.
 */
export function bundledModule(path: string): string {
  const entry = join(PACKAGE_DIR, path);
  return pathToFileURL(sourceBundle({ packageDir: PACKAGE_DIR, name: bundleName(PACKAGE_DIR, entry), entry }))
    .href;
}

/**
 * The daemon's source (`Daemon` and `startRunnerAgent`) bundled into one file for the child
 * daemons the crash tests start and kill: loading it takes under a third of the CPU that loading
 * the source module by module through tsx took (0.3 s against 0.9 s a start, and the kill loops
 * start dozens), and it is built from the source as it is now, never from a stale dist/.
 */
function childDaemonBundle(): string {
  return sourceBundle({
    packageDir: PACKAGE_DIR,
    name: "child-daemon",
    contents:
      'export { Daemon } from "./daemon.ts";\nexport { startRunnerAgent } from "./run/runner-agent.ts";\n',
    resolveDir: import.meta.dirname,
  });
}

/**
 * Starts a real daemon in a child process for crash tests. With `crashAt`, the child sends
 * itself SIGKILL just before that completion step of the first dispatch to reach it. With
 * `offerThenCrash`, it offers that dispatch in process, prints the verdict and sends itself
 * SIGKILL as soon as the offer resolves; its agents are held back (never started), so the
 * crash always comes before the dispatch runs. With `crashAfterSpawn`, it sends itself SIGKILL
 * as soon as its first agent is spawned, before the agent's pid is written anywhere.
 */
export function startChildDaemon(
  world: TestWorld,
  options: {
    crashAt?: string;
    maxConcurrent?: number;
    heartbeatSeconds?: number;
    agentScript?: string;
    offerThenCrash?: Record<string, unknown>;
    /** SIGKILL the child right after it spawns its first agent, before the pid is recorded. */
    crashAfterSpawn?: boolean;
  } = {},
): { child: ChildProcess; exited: Promise<NodeJS.Signals | number | null>; output: () => string } {
  const entry = pathToFileURL(childDaemonBundle()).href;
  const offer = options.offerThenCrash;
  const script = `
import { Daemon, startRunnerAgent } from ${JSON.stringify(entry)};
const crashAt = process.env.CRASH_AT || undefined;
const holdBack = ${offer ? "true" : "false"};
const crashAfterSpawn = ${options.crashAfterSpawn ? "true" : "false"};
const heldAgent = () => ({
  pid: -1,
  done: new Promise(() => {}),
  cancel: () => {},
  progress: () => ({ turns: 0, toolUses: 0 }),
});
const daemon = new Daemon({
  root: ${JSON.stringify(world.root)},
  startAgent: (agentOptions) => {
    if (holdBack) return heldAgent();
    const agent = startRunnerAgent(agentOptions);
    if (crashAfterSpawn) process.kill(process.pid, "SIGKILL");
    return agent;
  },
  claudeBinary: "/nonexistent/claude",
  openclawWorkspace: false,
  retryDelayMs: { rateLimit: 50, other: 50 },
  log: (line) => console.log(line),
  settings: {
    trusted_repos: [${JSON.stringify(world.base)}],
    max_concurrent: ${options.maxConcurrent ?? 2},
    heartbeat_seconds: ${options.heartbeatSeconds ?? 30},
    agents: { codex: { command: [process.execPath, ${JSON.stringify(options.agentScript ?? world.agentScript)}, "{prompt}"] } },
  },
  beforeCompletionStep: (step) => {
    if (step === crashAt) process.kill(process.pid, "SIGKILL");
  },
});
await daemon.start();
console.log("daemon ready");
process.on("SIGTERM", () => void daemon.stop(0).then(() => process.exit(0)));
${
  offer
    ? `const verdict = await daemon.offer(${JSON.stringify(JSON.stringify(offer))}, { source: "crash-test" });
console.log("offer verdict " + JSON.stringify(verdict));
process.kill(process.pid, "SIGKILL");`
    : ""
}
`;
  const scriptPath = join(world.base, `child-daemon-${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(scriptPath, script);
  const child = spawn(process.execPath, ["--enable-source-maps", scriptPath], {
    cwd: join(import.meta.dirname, ".."),
    env: { ...process.env, CRASH_AT: options.crashAt ?? "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  // "close", not "exit": the output is whole only once the pipes closed, and exit can come first.
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.on("close", (code, signal) => resolve(signal ?? code)),
  );
  return { child, exited, output: () => output };
}

/**
 * A daemon on the world's state root as most tests want it: the scratch repositories trusted,
 * {@link TRIVIAL_AGENT} as the `codex` agent, no Claude Code and no OpenClaw workspace.
 * `options` and `settings` override those defaults. Not started.
 */
export function testDaemon(
  world: TestWorld,
  options: Partial<DaemonOptions> = {},
  settings: Record<string, unknown> = {},
): Daemon {
  return new Daemon({
    root: world.root,
    claudeBinary: "/nonexistent/claude",
    openclawWorkspace: false,
    ...options,
    settings: {
      trusted_repos: [world.base],
      agents: { codex: { command: [process.execPath, world.agentScript, "{prompt}"] } },
      ...settings,
    },
  });
}

/**
 * The shared context of the daemon's rooms, as a started daemon on the world's state root would
 * have it (the folders made, the scratch repositories trusted, the `codex` agent known, a
 * local-only delivery), for testing one room without the others. `lines` collects the log.
 */
export async function roomContext(
  world: TestWorld,
  settings: Partial<DispatchSettings> = {},
  environment: Partial<DaemonContext["environment"]> = {},
): Promise<DaemonContext & { lines: string[] }> {
  const folders = world.layout.dispatch;
  for (const folder of [
    folders.incoming,
    folders.tmp,
    folders.claimed,
    folders.sessions,
    folders.completed,
    folders.rejected,
    folders.control,
  ]) {
    await mkdir(folder, { recursive: true });
  }
  const lines: string[] = [];
  const log = (line: string) => {
    lines.push(line);
  };
  const now = () => new Date();
  const fullSettings = {
    max_concurrent: 2,
    trusted_repos: [world.base],
    session_timeout_seconds: 3600,
    heartbeat_seconds: 30,
    shutdown_grace_seconds: 300,
    agents: { codex: { command: [process.execPath, world.agentScript, "{prompt}"] } },
    ...settings,
  } as DispatchSettings;
  const audit = auditLog(world.layout, now, log);
  return {
    layout: world.layout,
    settings: fullSettings,
    environment: {
      secret: undefined,
      claudeBinary: undefined,
      knownAgents: ["codex"],
      disallowedTools: [],
      ...environment,
    },
    delivery: createCompletionDelivery({
      layout: world.layout,
      settings: fullSettings,
      context: { audit: (event, fields) => audit(event, fields), log },
    }),
    now,
    log,
    audit,
    stopping: false,
    lines,
  };
}

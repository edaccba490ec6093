import { execFile } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { copyFile, cp, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { promisify } from "node:util";
import { type GstackLayout, gstackLayout } from "@gstack/contracts";
import {
  connectGateway,
  type GatewayConnection,
  type GatewayRequestOptions,
  makeOpenClawHome,
  type OpenClawGateway,
  type OpenClawGatewayOptions,
  type OpenClawHome,
  type OpenClawRun,
  runOpenClaw,
  startOpenClawGateway as startTestbedGateway,
} from "@gstack/openclaw-testbed";
import { type ScriptedModel, type ScriptedStep, scripted, startScriptedModel } from "@gstack/scripted-model";
// The daemon app runs from its source, as the bundled gstack-dispatch command is built from it:
// the plugin depends on no app (see turbo.json for how its build and tests follow the daemon).
import { Daemon } from "../../../apps/daemon/src/index";
import { loadBudget, waitUntil } from "../../../vitest.load-budget";
import { DISPATCH_MARKER } from "./openclaw-scripts";
import { type HistoryMessage, historyMessage } from "./session-delivery";

const run = promisify(execFile);

/** This package's folder (where `pnpm pack` runs). */
export const pluginPackageDir = join(import.meta.dirname, "..");

/** The real Claude Code CLI the daemon's own end-to-end tests use. */
export const claudeCli = join(
  pluginPackageDir,
  "..",
  "..",
  "apps",
  "daemon",
  "node_modules",
  ".bin",
  "claude",
);

/** Set by the test run's global set-up to the tarball it packed once for every test file. */
export const PACKED_PLUGIN_ENV = "GSTACK_TEST_PLUGIN_TARBALL";

/**
 * Packs this package the way it is published (`pnpm pack`) and returns the tarball path.
 * The package must be built first. In a test run that packed it already (PACKED_PLUGIN_ENV),
 * the same tarball is copied into `destination` instead.
 */
export async function packPlugin(destination: string): Promise<string> {
  await mkdir(destination, { recursive: true });
  const packed = process.env[PACKED_PLUGIN_ENV];
  if (packed) {
    const copy = join(destination, basename(packed));
    await copyFile(packed, copy);
    return copy;
  }
  await run("pnpm", ["pack", "--pack-destination", destination], { cwd: pluginPackageDir });
  const tarball = (await readdir(destination)).find((name) => name.endsWith(".tgz"));
  if (!tarball) throw new Error(`pnpm pack left no tarball in ${destination}`);
  return join(destination, tarball);
}

/** A gstack state root with a trusted scratch repository, for the daemon and the plugin. */
export interface GstackWorld {
  base: string;
  root: string;
  layout: GstackLayout;
  repo: string;
  remove(): Promise<void>;
}

export async function makeGstackWorld(): Promise<GstackWorld> {
  const base = await mkdtemp(join(tmpdir(), "gstack-plugin-"));
  const root = join(base, "gstack");
  const repo = join(base, "acme-widget");
  await mkdir(root, { recursive: true });
  await mkdir(repo, { recursive: true });
  await run("git", ["init", "-q", "-b", "main", repo]);
  await run("git", ["-C", repo, "config", "user.name", "Scripted Agent"]);
  await run("git", ["-C", repo, "config", "user.email", "agent@example.invalid"]);
  await writeFile(join(repo, "README.md"), "# acme-widget\n");
  await run("git", ["-C", repo, "add", "README.md"]);
  await run("git", ["-C", repo, "commit", "-q", "-m", "Initial commit"]);
  await writeFile(join(root, "config.yaml"), `dispatch:\n  trusted_repos:\n    - ${base}\n`);
  return {
    base,
    root,
    layout: gstackLayout(root),
    repo,
    remove: () => rm(base, { recursive: true, force: true }),
  };
}

/** The OpenClaw config that points its agent at a scripted model over `anthropic-messages`. */
export function scriptedOpenClawConfig(model: ScriptedModel, pluginConfig: Record<string, unknown>) {
  return {
    models: {
      providers: {
        scripted: {
          baseUrl: model.url,
          api: "anthropic-messages",
          apiKey: "scripted-key",
          models: [
            {
              id: "scripted-model",
              name: "Scripted model (offline)",
              contextWindow: 200_000,
              maxTokens: 8192,
            },
          ],
        },
      },
    },
    agents: { defaults: { model: { primary: "scripted/scripted-model" } } },
    plugins: { entries: { gstack: { enabled: true, config: pluginConfig } } },
  };
}

/**
 * Set by the test run's global set-up to the plugin folder that one real
 * `openclaw plugins install` of the packed tarball wrote (`<state>/extensions/gstack`).
 */
export const INSTALLED_PLUGIN_ENV = "GSTACK_TEST_PLUGIN_INSTALLED";

/**
 * Installs the packed plugin into an OpenClaw home the way a user does
 * (`openclaw plugins install <tarball>`, which also enables it; `openclaw plugins enable gstack`
 * only if it did not). In a test run whose global set-up already installed this very tarball
 * once (INSTALLED_PLUGIN_ENV), that install's folder is copied into the home and the plugin
 * enabled in its openclaw.json, which is all the install writes there: the install command takes
 * 15–40 s of CPU on a two-core machine, and every real-gateway test file needs the plugin.
 */
export async function installPlugin(home: OpenClawHome, tarball: string): Promise<void> {
  if (await copyRunInstall(home, tarball)) return;
  await installAndEnable(home, tarball, "gstack");
}

/**
 * `openclaw plugins install <source>` into the home, as a person runs it, then `plugins enable
 * <id>` only if the install did not enable it (the install enables what it installs; `enable`
 * costs seconds of CPU). Throws with the command's output when either fails.
 */
async function installAndEnable(home: OpenClawHome, source: string, id: string): Promise<void> {
  const run = async (args: string[]) => {
    const ran = await runOpenClaw(args, { home: home.home, timeoutMs: loadBudget(120_000) });
    if (ran.code !== 0) throw new Error(`openclaw ${args.join(" ")} failed:\n${ran.stdout}\n${ran.stderr}`);
  };
  await run(["plugins", "install", source, "--force", "--accept-capabilities"]);
  const config = JSON.parse(await readFile(home.configPath, "utf8")) as PluginsConfig;
  if (config.plugins?.entries?.[id]?.enabled === true) return;
  await run(["plugins", "enable", id]);
}

async function sha256(file: string): Promise<string> {
  return createHash("sha256")
    .update(await readFile(file))
    .digest("hex");
}

/** Copies the run's one real install when `tarball` is the run's packed plugin; false otherwise. */
async function copyRunInstall(home: OpenClawHome, tarball: string): Promise<boolean> {
  const installed = process.env[INSTALLED_PLUGIN_ENV];
  const packed = process.env[PACKED_PLUGIN_ENV];
  if (!installed || !packed || (await sha256(tarball)) !== (await sha256(packed))) return false;
  await cp(installed, join(home.stateDir, "extensions", "gstack"), {
    recursive: true,
    verbatimSymlinks: true,
  });
  await updateConfig(home, (entries) => ({ ...entries, gstack: { ...entries.gstack, enabled: true } }));
  return true;
}

/**
 * Runs one agent turn in a session through the gateway, as `openclaw agent --session-key <key>
 * --message <text> --json --timeout <s>` does, and answers as that command's run would: `code` 0
 * when the turn ended ok (1 when it ended in error or timed out, or the call failed: a gateway
 * stopped or killed mid-turn, say), `stdout` the JSON the command prints, `stderr` why it failed.
 * It goes over the gateway's kept connection (gatewayConnection) instead of starting a CLI process
 * per turn; `openclawAgentCli` is the command itself.
 */
export async function agentTurn(
  gateway: OpenClawGateway,
  sessionKey: string,
  message: string,
): Promise<OpenClawRun> {
  // The turn's own limit grows with the load; the wait for it outlasts it by the command's 30 s.
  const turnSeconds = Math.ceil(loadBudget(120_000) / 1000);
  try {
    // What the command sends (OpenClaw's agent-via-gateway): a fresh idempotency key as the run's
    // id, no delivery to a channel, and a wait for the final answer, not the "accepted" one.
    const response = await gatewayCall<AgentResponse>(
      gateway,
      "agent",
      { message, sessionKey, deliver: false, timeout: turnSeconds, idempotencyKey: randomUUID() },
      { expectFinal: true, timeoutMs: (turnSeconds + 30) * 1000 },
    );
    const deliveryStatus = response.result?.deliveryStatus;
    const printed = deliveryStatus === undefined ? response : { ...response, deliveryStatus };
    return {
      code: agentExitCode(response.status),
      signal: null,
      stdout: `${JSON.stringify(printed, undefined, 2)}\n`,
      stderr: "",
    };
  } catch (error) {
    return { code: 1, signal: null, stdout: "", stderr: `${(error as Error).message}\n` };
  }
}

/** The final answer of the gateway's `agent` method, as far as the command reads it. */
interface AgentResponse {
  status?: string;
  result?: { deliveryStatus?: unknown };
}

/** The exit code `openclaw agent` gives a turn that ended with `status` (none: left at 0). */
function agentExitCode(status: string | undefined): number {
  if (status === undefined || status === "") return 0;
  return status === "ok" || status === "completed" ? 0 : 1;
}

/**
 * One turn by the real `openclaw agent` command, for the tests that prove the command a person
 * runs; every other turn goes through agentTurn.
 */
export async function openclawAgentCli(
  home: OpenClawHome,
  gateway: OpenClawGateway,
  sessionKey: string,
  message: string,
): Promise<OpenClawRun> {
  // The turn's own limit and the command's grow with the load, the command's outlasting the turn's.
  const turnSeconds = Math.ceil(loadBudget(120_000) / 1000);
  return await runOpenClaw(
    ["agent", "--session-key", sessionKey, "--message", message, "--json", "--timeout", String(turnSeconds)],
    {
      home: home.home,
      env: gatewayEnv(gateway),
      timeoutMs: turnSeconds * 1000 + loadBudget(60_000),
    },
  );
}

/** The kept connection to each gateway; a restarted gateway is another object, so another connection. */
const connections = new Map<OpenClawGateway, Promise<GatewayConnection>>();

/**
 * The test's one connection to `gateway` (OpenClaw's own client, in this process), made on first
 * use and made again only if the gateway closed it while still running. It is closed when the
 * gateway is stopped or killed through this module (startOpenClawGateway) and by
 * closeGatewayConnections.
 */
export async function gatewayConnection(gateway: OpenClawGateway): Promise<GatewayConnection> {
  const kept = await connections.get(gateway)?.catch(() => undefined);
  if (kept && !kept.closed) return kept;
  const connecting = connectGateway(gateway, {
    connectTimeoutMs: loadBudget(60_000),
    requestTimeoutMs: loadBudget(60_000),
  });
  connections.set(gateway, connecting);
  return await connecting;
}

/** Calls a method of the running gateway over its kept connection (see gatewayConnection). */
export async function gatewayCall<T = unknown>(
  gateway: OpenClawGateway,
  method: string,
  params: unknown,
  options: GatewayRequestOptions = {},
): Promise<T> {
  return await (await gatewayConnection(gateway)).request<T>(method, params, options);
}

/** Closes the kept connection to `gateway`, if there is one. */
export async function closeGatewayConnection(gateway: OpenClawGateway): Promise<void> {
  const kept = connections.get(gateway);
  connections.delete(gateway);
  await (await kept?.catch(() => undefined))?.close();
}

/** Closes every kept gateway connection of this test file. */
export async function closeGatewayConnections(): Promise<void> {
  for (const gateway of [...connections.keys()]) await closeGatewayConnection(gateway);
}

/** The environment that points `openclaw` commands at a running gateway. */
export function gatewayEnv(gateway: OpenClawGateway): Record<string, string> {
  return { OPENCLAW_GATEWAY_URL: `ws://127.0.0.1:${gateway.port}`, OPENCLAW_GATEWAY_TOKEN: gateway.token };
}

/**
 * Polls `probe` until it gives a value (not undefined, not false). `timeoutMs` is what the wait
 * may take on an idle machine; a loaded one gets more (vitest.load-budget.ts).
 */
export async function waitFor<T>(
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs: number,
  what = "a condition",
): Promise<T> {
  return waitUntil(
    async () => {
      const value = await probe();
      return value === false ? undefined : value;
    },
    { idleMs: timeoutMs, what: `waiting for ${what}` },
  );
}

/** The session's messages as OpenClaw shows them to the person (`chat.history`), role and text. */
export async function chatHistory(gateway: OpenClawGateway, sessionKey: string): Promise<HistoryMessage[]> {
  const answer = await sessionHistory(gateway, sessionKey);
  return (answer.messages ?? []).map(historyMessage);
}

/**
 * The gateway's `chat.history` answer for a session (its last `limit` messages, 500 unless told),
 * as `openclaw gateway call chat.history --json` prints it.
 */
export async function sessionHistory(
  gateway: OpenClawGateway,
  sessionKey: string,
  limit = 500,
): Promise<{ messages?: unknown[] }> {
  // Polled (waitFor asks again 50 ms after an answer), each ask costs the gateway a read of the
  // session; so one gateway is asked at most every HISTORY_POLL_MS, about as often as a CLI
  // process per ask managed, without the process.
  const since = Date.now() - (historyAskedAt.get(gateway) ?? 0);
  if (since < HISTORY_POLL_MS) await new Promise((resolve) => setTimeout(resolve, HISTORY_POLL_MS - since));
  historyAskedAt.set(gateway, Date.now());
  return await gatewayCall<{ messages?: unknown[] }>(gateway, "chat.history", { sessionKey, limit });
}

/** The least time between two asks of one gateway for a session's history. */
const HISTORY_POLL_MS = 250;
/** When each gateway was last asked for a session's history. */
const historyAskedAt = new WeakMap<OpenClawGateway, number>();

/**
 * Asks the scripted OpenClaw agent, as the user, to call `gstack_dispatch` with `args`, and
 * returns the dispatch file the tool wrote into the daemon's incoming folder (read before a
 * daemon takes it: start the daemon after this).
 */
export async function dispatchFromChat(
  gateway: OpenClawGateway,
  world: GstackWorld,
  args: Record<string, unknown>,
  sessionKey: string,
): Promise<Record<string, unknown>> {
  const before = new Set(await readdir(world.layout.dispatch.incoming).catch(() => []));
  const turn = await agentTurn(
    gateway,
    sessionKey,
    `Please do this. ${DISPATCH_MARKER}${JSON.stringify(args)}`,
  );
  if (turn.code !== 0)
    throw new Error(`the dispatching turn failed:\n${turn.stderr}\n${(await gateway.output()).slice(-4000)}`);
  const added = (await readdir(world.layout.dispatch.incoming)).filter(
    (name) => name.endsWith(".json") && !name.startsWith(".") && !before.has(name),
  );
  if (added.length !== 1)
    throw new Error(`expected one new dispatch file, found ${added.join(", ") || "none"}`);
  return JSON.parse(await readFile(join(world.layout.dispatch.incoming, added[0] as string), "utf8"));
}

/**
 * A coding agent that plans first: its plan (carrying `planNeedle`), then, once approved, the
 * edit of `file`, its commit, and a report whose "What shipped" carries `shippedNeedle`.
 */
export function planThenExecuteScript(file: string, planNeedle: string, shippedNeedle: string) {
  return [
    scripted.text(`## Plan\n1. Add ${file} with one line. ${planNeedle}\n2. Commit it.`),
    scripted.write(file, "planned and approved\n"),
    scripted.bash(`git add ${file}`),
    scripted.bash(`git commit -m 'Add ${file}'`),
    scripted.text(
      [
        `Added ${file} as planned.`,
        "## What shipped",
        `- ${file} ${shippedNeedle}`,
        "## Decisions made",
        "- none",
        "## Learnings logged",
        "- none",
        "## Needs human judgment",
        "- None",
      ].join("\n"),
    ),
  ];
}

/** What a scripted coder writes as one gstack unattended run (gstack's run directory contract). */
export interface GstackRunShape {
  /** The run id; each decision's id is `<run>-<label>`. */
  run: string;
  status: "complete" | "gate_pending" | "incomplete" | "interrupted" | "refused";
  gate_rev: number;
  /** Rows of decisions.jsonl without `schema_version`, `run` and `id`, which are filled in from `label`. */
  decisions: ({ label: string } & Record<string, unknown>)[];
}

/**
 * The Write steps with which a scripted coder makes a gstack run directory at `dir` (absolute):
 * decisions.jsonl and plan.md, then run.json listing both with their sha256, as gstack writes it.
 */
export function gstackRunWrites(dir: string, shape: GstackRunShape): ScriptedStep[] {
  const decisions = shape.decisions
    .map(({ label, ...row }) =>
      JSON.stringify({
        schema_version: 1,
        run: shape.run,
        id: `${shape.run}-${label}`,
        gate_rev: shape.gate_rev,
        ...row,
      }),
    )
    .map((line) => `${line}\n`)
    .join("");
  const files: Record<string, string> = {
    "decisions.jsonl": decisions,
    "plan.md": "## Implementation plan\n\n1. Escape the search query.\n",
  };
  const artifacts = Object.fromEntries(
    Object.entries(files).map(([name, text]) => [
      name,
      { path: name, sha256: createHash("sha256").update(text).digest("hex") },
    ]),
  );
  const manifest = {
    schema_version: 1,
    run: shape.run,
    status: shape.status,
    required_phases: [],
    phases: {},
    artifacts,
    session_kind: "unattended",
    gate_rev: shape.gate_rev,
  };
  return [
    ...Object.entries(files).map(([name, text]) => scripted.write(join(dir, name), text)),
    scripted.write(join(dir, "run.json"), `${JSON.stringify(manifest, null, 2)}\n`),
  ];
}

/** The coding daemons' last log lines in this test file, printed when a test fails. */
const daemonLines: string[] = [];
function keepDaemonLine(line: string): void {
  daemonLines.push(`${new Date().toISOString()} ${line}`);
  if (daemonLines.length > 200) daemonLines.shift();
}

/**
 * What a person debugging a failed end-to-end test needs first: the plugin's and the gateway's
 * warnings, the coding daemon's log, and where each dispatch of the world stands (its state,
 * waiting notice, completion). Called from `onTestFailed`.
 */
export async function failureReport(gateway: OpenClawGateway | undefined, world: GstackWorld | undefined) {
  const parts: string[] = [];
  if (gateway) {
    const output = await gateway.output().catch((error: Error) => `(no output: ${error.message})`);
    const lines = output.split("\n").filter((line) => /gstack|error|warn|fail/i.test(line));
    parts.push(
      `gateway (${gateway.running() ? "running" : "stopped"}), last matching lines:`,
      ...lines.slice(-60),
    );
  }
  parts.push("coding daemon log:", ...daemonLines.slice(-80));
  if (world) {
    const sessions = world.layout.dispatch.sessions;
    for (const id of await readdir(sessions).catch(() => [] as string[])) {
      const state = await readFile(join(sessions, id, "state.json"), "utf8").catch(() => "(no state)");
      const { status, attempt, awaiting } = JSON.parse(state.startsWith("{") ? state : "{}") as {
        status?: string;
        attempt?: number;
        awaiting?: { round?: number; answer?: unknown };
      };
      const notice = await stat(world.layout.dispatch.awaitingJson(id)).then(
        () => "notice on disk",
        () => "no notice",
      );
      const completed = await stat(world.layout.dispatch.completedJson(id)).then(
        () => "completed",
        () => "no completion",
      );
      parts.push(
        `dispatch ${id}: ${status ?? "?"} attempt ${attempt ?? "?"}${awaiting ? ` awaiting round ${awaiting.round}${awaiting.answer ? " (answered)" : ""}` : ""}, ${notice}, ${completed}`,
      );
    }
  }
  return parts.join("\n");
}

/**
 * The real daemon running the real Claude Code CLI against a scripted model (its script, or the
 * model's options), until stopped. `now` is the daemon's wall clock (default the real one): a
 * daemon started with a clock past a wait's expiry ends that wait at once, with no real wait.
 */
export async function startCodingDaemon(
  world: GstackWorld,
  script: ScriptedStep[] | Parameters<typeof startScriptedModel>[0],
  settings: Record<string, unknown> = {},
  clock: { now?: () => Date } = {},
) {
  const coder = await startScriptedModel(Array.isArray(script) ? { script } : script);
  const coderHome = await mkdtemp(join(tmpdir(), "gstack-coder-home-"));
  const daemon = new Daemon({
    root: world.root,
    openclawWorkspace: false,
    log: keepDaemonLine,
    claudeBinary: claudeCli,
    agentEnv: { ...coder.claudeEnv(coderHome), CLAUDE_CODE_MAX_RETRIES: "0" },
    settings: { trusted_repos: [world.base], ...settings },
    ...(clock.now ? { now: clock.now } : {}),
  });
  await daemon.start();
  return {
    daemon,
    coder,
    async stop() {
      await daemon.stop(0);
      await coder.close();
      await rm(coderHome, { recursive: true, force: true });
    },
  };
}

/** Runs the coding daemon until dispatch `id` has its completion file, then stops it. */
export async function runCodingDaemonUntilDone(
  world: GstackWorld,
  script: Parameters<typeof startCodingDaemon>[1],
  id: string,
): Promise<void> {
  const coding = await startCodingDaemon(world, script);
  try {
    await waitFor(
      () =>
        stat(world.layout.dispatch.completedJson(id)).then(
          () => true,
          () => undefined,
        ),
      120_000,
      `the completion of ${id}`,
    );
  } finally {
    await coding.stop();
  }
}

/**
 * Starts the real gateway (openclaw-testbed's) with a start-up wait that grows with the load:
 * on a busy two-core machine its start alone can pass the testbed's fixed two minutes.
 */
export async function startOpenClawGateway(options: OpenClawGatewayOptions): Promise<OpenClawGateway> {
  const started = await startTestbedGateway({ startTimeoutMs: loadBudget(120_000), ...options });
  // The test's kept connection to it (gatewayConnection) goes with it.
  const gateway: OpenClawGateway = {
    ...started,
    async stop(graceMs) {
      try {
        await started.stop(graceMs);
      } finally {
        await closeGatewayConnection(gateway);
      }
    },
    async kill() {
      try {
        await started.kill();
      } finally {
        await closeGatewayConnection(gateway);
      }
    },
  };
  const list = gatewaysStarted.get(options.home) ?? [];
  list.push(gateway);
  gatewaysStarted.set(options.home, list);
  return gateway;
}

/** The gateways started on each OpenClaw home in this test file, oldest first. */
const gatewaysStarted = new Map<string, OpenClawGateway[]>();

/** The gateways started on `home` so far (restarts included), oldest first. */
export function gatewaysOn(home: string): readonly OpenClawGateway[] {
  return gatewaysStarted.get(home) ?? [];
}

/** A tiny OpenClaw channel whose outbound adapter appends every message it is given to a file. */
export async function writeRecordingChannel(folder: string, file: string) {
  await mkdir(folder, { recursive: true });
  await writeFile(
    join(folder, "package.json"),
    JSON.stringify({
      name: "recording-chat",
      version: "1.0.0",
      type: "module",
      openclaw: {
        extensions: ["./index.js"],
        channel: { id: "recording-chat", label: "Recording chat", blurb: "Records outbound messages." },
      },
    }),
  );
  await writeFile(
    join(folder, "openclaw.plugin.json"),
    JSON.stringify({
      id: "recording-chat",
      name: "Recording chat",
      description: "Records outbound messages to a file.",
      channels: ["recording-chat"],
      activation: { onStartup: true },
      configSchema: { type: "object", additionalProperties: true, properties: {} },
      channelConfigs: {
        "recording-chat": { schema: { type: "object", additionalProperties: true, properties: {} } },
      },
    }),
  );
  await writeFile(
    join(folder, "index.js"),
    `import { appendFileSync } from "node:fs";
const FILE = ${JSON.stringify(file)};
const plugin = {
  id: "recording-chat",
  meta: { id: "recording-chat", label: "Recording chat", selectionLabel: "Recording chat", docsPath: "/channels/recording-chat", blurb: "Records outbound messages." },
  capabilities: { chatTypes: ["direct"] },
  config: {
    listAccountIds: () => ["default"],
    resolveAccount: () => ({ accountId: "default", enabled: true, configured: true }),
    inspectAccount: () => ({ enabled: true, configured: true }),
    isConfigured: () => true,
  },
  outbound: {
    deliveryMode: "direct",
    sendText: async (ctx) => {
      const messageId = "m-" + Date.now() + "-" + Math.random().toString(36).slice(2);
      appendFileSync(FILE, JSON.stringify({ to: ctx.to, text: ctx.text, messageId }) + "\\n");
      return { channel: "recording-chat", messageId };
    },
  },
};
export default {
  id: "recording-chat",
  name: "Recording chat",
  register(api) {
    api.registerChannel({ plugin });
    // What this channel's inbound handling does for a message from a person: record the
    // session's last route, so replies and reports go back to that person.
    api.registerGatewayMethod("recording-chat.inbound", async ({ params, respond }) => {
      try {
        const storePath = api.runtime.agent.session.resolveStorePath(api.config.session?.store, { agentId: "main" });
        await api.runtime.channel.session.updateLastRoute({
          storePath,
          sessionKey: params.sessionKey,
          channel: "recording-chat",
          deliveryContext: { channel: "recording-chat", to: params.from },
          createIfMissing: true,
        });
        respond(true, { ok: true });
      } catch (error) {
        respond(false, undefined, { code: "UNAVAILABLE", message: String(error && error.stack || error) });
      }
    });
  },
};
`,
  );
}

/**
 * Set by the test run's global set-up to the recording channel's folder that one real
 * `openclaw plugins install` wrote (`<state>/extensions/recording-chat`), once it saw that the
 * install copies the channel's folder byte for byte.
 */
export const INSTALLED_RECORDING_CHANNEL_ENV = "GSTACK_TEST_RECORDING_CHANNEL_INSTALLED";

/**
 * Installs and enables the recording channel in an OpenClaw home; it records to `file`. In a test
 * run whose global set-up installed the channel once (INSTALLED_RECORDING_CHANNEL_ENV), that
 * install's folder is copied into the home, with this home's channel files written over it as the
 * install would have copied them, and the channel enabled in its openclaw.json, which is all the
 * install writes there: `openclaw plugins install` and `enable` take 7-9 s of CPU each, and
 * several test files need the channel. Otherwise the real commands run.
 */
export async function installRecordingChannel(
  home: OpenClawHome,
  folder: string,
  file: string,
): Promise<void> {
  const installed = process.env[INSTALLED_RECORDING_CHANNEL_ENV];
  if (installed) {
    const target = join(home.stateDir, "extensions", "recording-chat");
    await cp(installed, target, { recursive: true });
    await writeRecordingChannel(target, file);
    await updateConfig(home, (entries) => ({
      ...entries,
      "recording-chat": { ...entries["recording-chat"], enabled: true },
    }));
    return;
  }
  await writeRecordingChannel(folder, file);
  await installAndEnable(home, folder, "recording-chat");
}

/**
 * The global set-up's one real install of the recording channel into `home`, from `folder`: the
 * installed folder when the install copied the channel's files byte for byte, and nothing more
 * (so a copy of it with another home's files written over it is what an install there writes).
 */
export async function installRecordingChannelOnce(home: OpenClawHome, folder: string): Promise<string> {
  await installRecordingChannel(home, folder, join(folder, "..", "recorded.jsonl"));
  const installed = join(home.stateDir, "extensions", "recording-chat");
  if (!(await sameFiles(installed, folder)))
    throw new Error(`openclaw plugins install did not copy ${folder} as it is into ${installed}`);
  return installed;
}

/** True when `installed` holds exactly the files of `folder`, with the same bytes. */
async function sameFiles(installed: string, folder: string): Promise<boolean> {
  const names = (await readdir(folder)).sort();
  if (names.join("\n") !== (await readdir(installed)).sort().join("\n")) return false;
  for (const name of names) {
    const [a, b] = await Promise.all([readFile(join(installed, name)), readFile(join(folder, name))]);
    if (!a.equals(b)) return false;
  }
  return true;
}

/** The part of openclaw.json that names plugins. */
interface PluginsConfig {
  plugins?: { entries?: Record<string, Record<string, unknown>> };
}

/** Rewrites the home's `plugins.entries` (openclaw.json, 0600) with what `change` makes of them. */
async function updateConfig(
  home: OpenClawHome,
  change: (entries: Record<string, Record<string, unknown>>) => Record<string, Record<string, unknown>>,
): Promise<void> {
  const config = JSON.parse(await readFile(home.configPath, "utf8")) as PluginsConfig;
  const plugins = config.plugins ?? {};
  config.plugins = { ...plugins, entries: change(plugins.entries ?? {}) };
  await writeFile(home.configPath, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
}

/** A calendar tool, as a person's OpenClaw may have one: today's events, here one scripted event. */
export async function installScriptedCalendar(target: OpenClawHome, folder: string): Promise<void> {
  await mkdir(folder, { recursive: true });
  await writeFile(
    join(folder, "package.json"),
    JSON.stringify({
      name: "scripted-calendar",
      version: "1.0.0",
      type: "module",
      openclaw: { extensions: ["./index.js"] },
    }),
  );
  await writeFile(
    join(folder, "openclaw.plugin.json"),
    JSON.stringify({
      id: "scripted-calendar",
      name: "Scripted calendar",
      description: "Today's calendar events, scripted.",
      activation: { onStartup: true },
      contracts: { tools: ["calendar_today"] },
      configSchema: { type: "object", additionalProperties: true, properties: {} },
    }),
  );
  await writeFile(
    join(folder, "index.js"),
    `export default {
  id: "scripted-calendar",
  name: "Scripted calendar",
  register(api) {
    api.registerTool({
      name: "calendar_today",
      label: "Calendar today",
      description: "Today's calendar events.",
      parameters: { type: "object", additionalProperties: false, properties: {} },
      async execute() {
        const events = [{ start: "09:30", end: "12:00", title: "Baku coding session" }, { start: "14:00", title: "Dentist" }];
        return { content: [{ type: "text", text: JSON.stringify({ events }) }], details: { count: events.length } };
      },
    }, { name: "calendar_today" });
  },
};
`,
  );
  await installAndEnable(target, folder, "scripted-calendar");
}

/** The session's person is on the recording channel: their messages arrive from `to`. */
export async function bindRecordingPerson(
  gateway: OpenClawGateway,
  session: string,
  to: string,
): Promise<void> {
  await gatewayCall(gateway, "recording-chat.inbound", { sessionKey: session, from: to });
}

export { makeOpenClawHome };

import { execFileSync } from "node:child_process";
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { signCallback } from "@gstack/contracts";
import { submitDispatch } from "@gstack/daemon-client";
import { type OpenClawGateway, type OpenClawHome, runOpenClaw } from "@gstack/openclaw-testbed";
import { type ScriptedModel, scripted, startScriptedModel } from "@gstack/scripted-model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadBudget } from "../../../vitest.load-budget";
import { HOST_RANGE_MARK } from "./host-range";
import { DISPATCH_MARKER, newestUserText, openclawAgentResponder, TOOL_MARKER } from "./openclaw-scripts";
import {
  agentTurn,
  type GstackWorld,
  installPlugin,
  makeGstackWorld,
  makeOpenClawHome,
  openclawAgentCli,
  packPlugin,
  pluginPackageDir,
  runCodingDaemonUntilDone,
  scriptedOpenClawConfig,
  sessionHistory,
  startCodingDaemon,
  startOpenClawGateway,
  waitFor,
} from "./openclaw-world";
import { reportMarker } from "./report-outbox";

const SESSION = "agent:main:main";
const CALLBACK_SECRET = "callback-secret-for-tests-0123456789abcdef";

function coderScript(file: string, shipped: string) {
  return [
    scripted.write(file, `hello from ${file}\n`),
    scripted.bash(`git add ${file}`),
    scripted.bash(`git commit -m 'Add ${file}'`),
    scripted.text(
      [
        `Added ${file}.`,
        "## What shipped",
        `- ${shipped}`,
        "## Decisions made",
        "- Plain text",
        "## Learnings logged",
        "- tool: Commits here need no hooks",
        "## Needs human judgment",
        `- Is ${file} the right name?`,
      ].join("\n"),
    ),
  ];
}

let world: GstackWorld;
let openclawModel: ScriptedModel;
let home: OpenClawHome;
let gateway: OpenClawGateway;
let scratch: string;
const startups: number[] = [];
/** Turns whose newest text contains one of these hang once (the model never answers them). */
const holds = new Set<string>();
/** When the agent was first given a text containing each needle (0 until then). */
const firstSeen = new Map<string, number>();

beforeAll(async () => {
  await stat(join(pluginPackageDir, "dist", "index.js")).catch(() => {
    throw new Error("build @gstack/openclaw-plugin before its end-to-end tests (pnpm run build)");
  });
  scratch = await mkdtemp(join(tmpdir(), "gstack-plugin-e2e-"));
  const tarball = await packPlugin(join(scratch, "pack"));
  world = await makeGstackWorld();
  await writeFile(world.layout.callbackSecret, CALLBACK_SECRET, { mode: 0o600 });
  await chmod(world.layout.callbackSecret, 0o600);
  openclawModel = await startScriptedModel({
    respond: (request) => {
      const fresh = newestUserText(request);
      for (const [needle] of firstSeen)
        if (fresh.includes(needle) && !firstSeen.get(needle)) firstSeen.set(needle, Date.now());
      for (const needle of holds) {
        if (fresh.includes(needle)) {
          holds.delete(needle);
          return { type: "hang" };
        }
      }
      try {
        return openclawAgentResponder(request);
      } catch (error) {
        console.error("the scripted agent could not answer", error);
        throw error;
      }
    },
  });
  const config = scriptedOpenClawConfig(openclawModel, { gstackHome: world.root });
  // No scheduled heartbeat at all ("0m"): a report can reach a session only through a turn the
  // plugin starts itself, never by waiting for the next beat (30 minutes by default). So a
  // report that arrives proves the immediate path, however long a busy machine takes.
  home = await makeOpenClawHome({
    ...config,
    agents: { defaults: { ...config.agents.defaults, heartbeat: { every: "0m" } } },
  });
  await installPlugin(home, tarball);
  gateway = await startGateway();
  startups.push(gateway.startupMs);
});

afterAll(async () => {
  console.log(`gateway start-up times (ms): ${startups.join(", ")}`);
  await gateway?.stop();
  await openclawModel?.close();
  await home?.remove();
  await world?.remove();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

async function dispatchFromChat(task: string, session = SESSION): Promise<Record<string, unknown>> {
  const before = new Set(await readdir(world.layout.dispatch.incoming).catch(() => []));
  const args = { task, project: "acme-widget", project_dir: world.repo };
  const turn = await agentTurn(gateway, session, `Please do this. ${DISPATCH_MARKER}${JSON.stringify(args)}`);
  if (turn.code !== 0) console.error((await gateway.output()).slice(-6000));
  expect(turn.code, turn.stderr).toBe(0);
  const added = (await readdir(world.layout.dispatch.incoming)).filter(
    (name) => name.endsWith(".json") && !name.startsWith(".") && !before.has(name),
  );
  expect(added).toHaveLength(1);
  return JSON.parse(await readFile(join(world.layout.dispatch.incoming, added[0] as string), "utf8"));
}

/** Agent requests whose newest user text (the turn's trigger) contains `needle`. */
function turnsAbout(needle: string) {
  return openclawModel.agentRequests().filter((request) => newestUserText(request).includes(needle));
}

/** The session's history as OpenClaw shows it to the person (`chat.history`), as JSON text. */
async function transcriptText(session = SESSION): Promise<string> {
  return JSON.stringify(await sessionHistory(gateway, session), undefined, 2);
}

/** How often `needle` occurs in `text`. */
function occurrences(text: string, needle: string): number {
  return text.split(needle).length - 1;
}

/** The report key marker of a completed dispatch, as its report ends. */
const markerOf = (id: string) => reportMarker(`gstack:${id}:completed`);

/** The whole conversation the agent was given in its newest request. */
function lastConversation(): string {
  return JSON.stringify(openclawModel.agentRequests().at(-1)?.body?.messages ?? []);
}

/**
 * The gateway on the shared home, given time to start as the machine's load allows (the
 * testbed's own default is a fixed 120 s, which a machine at load 13 on two cores ran past).
 */
function startGateway(): Promise<OpenClawGateway> {
  return startOpenClawGateway({ home: home.home, startTimeoutMs: loadBudget(120_000) });
}

function runDaemonUntilDone(id: string, file: string, shipped: string): Promise<void> {
  return runCodingDaemonUntilDone(world, coderScript(file, shipped), id);
}

// Each test runs real gateways, daemons and Claude Code CLIs; the kill test restarts a gateway.
describe("the gstack plugin in the real OpenClaw gateway", { timeout: loadBudget(600_000) }, () => {
  it("is installed from its tarball, enabled, and offers every tool", async () => {
    const inspected = await runOpenClaw(["plugins", "inspect", "gstack", "--runtime", "--json"], {
      home: home.home,
    });
    expect(inspected.code, inspected.stderr).toBe(0);
    const plugin = (
      JSON.parse(inspected.stdout) as { plugin: { status: string; enabled: boolean; toolNames: string[] } }
    ).plugin;
    expect(plugin.status).toBe("loaded");
    expect(plugin.enabled).toBe(true);
    expect(plugin.toolNames.sort()).toEqual(
      [
        "gstack_answer",
        "gstack_brief",
        "gstack_cancel",
        "gstack_dispatch",
        "gstack_handoffs",
        "gstack_land",
        "gstack_learnings",
        "gstack_report",
        "gstack_resume_handoff",
        "gstack_send_draft",
        "gstack_shipped",
        "gstack_status",
      ].sort(),
    );
    // The gateway runs the tested OpenClaw: once the plugin's service has logged, its log holds
    // no host-range line (one would also say a missing api.runtime.version).
    await waitFor(async () => (await gateway.output()).includes("gstack: following") || undefined, 60_000);
    expect((await gateway.output()).split("\n").filter((line) => line.includes(HOST_RANGE_MARK))).toEqual([]);
  });

  it("lets the agent dispatch, and posts the completion into the dispatching session", async () => {
    const dispatch = await dispatchFromChat("Add hello.txt with a greeting and commit it");
    expect(dispatch.reply_to).toMatchObject({ runtime: "openclaw", session_key: SESSION, agent_id: "main" });
    expect(dispatch.dispatched_by).toBe("openclaw");
    const id = dispatch.id as string;

    await runDaemonUntilDone(id, "hello.txt", "hello.txt with a greeting SHIPPED-ONE");
    // On the dispatch's own branch; the checkout's main has not moved.
    expect(
      execFileSync("git", ["-C", world.repo, "log", "--oneline", `gstack/${id}`], { encoding: "utf8" }),
    ).toContain("Add hello.txt");
    expect(
      execFileSync("git", ["-C", world.repo, "log", "--oneline", "main"], { encoding: "utf8" }),
    ).not.toContain("Add hello.txt");

    const arrived = await waitFor(() => turnsAbout("SHIPPED-ONE")[0], 90_000);
    const text = newestUserText(arrived);
    expect(text).toContain(`gstack dispatch ${id} (acme-widget) finished.`);
    expect(text).toContain("Is hello.txt the right name?");
    expect(text).toContain(`gstack_land with dispatch_id ${id} and action land`);
    // Recorded as delivered once the turn ended and the session's history holds the report.
    await waitFor(
      () => stat(join(home.stateDir, "gstack", "delivered", `${id}.json`)).catch(() => undefined),
      60_000,
    );
    expect(occurrences(await transcriptText(), markerOf(id))).toBeGreaterThan(0);
  });

  it("delivers a completion that finished while the gateway was down, exactly once", async () => {
    const dispatch = await dispatchFromChat("Add second.txt and commit it");
    const id = dispatch.id as string;
    await gateway.stop();
    await runDaemonUntilDone(id, "second.txt", "second.txt SHIPPED-WHILE-DOWN");
    expect(turnsAbout("SHIPPED-WHILE-DOWN")).toHaveLength(0);

    gateway = await startGateway();
    startups.push(gateway.startupMs);
    await waitFor(() => turnsAbout("SHIPPED-WHILE-DOWN")[0], 90_000);
    await waitFor(
      () => stat(join(home.stateDir, "gstack", "delivered", `${id}.json`)).catch(() => undefined),
      60_000,
    );
    // This turn is the real `openclaw agent` command, as a person runs it (the others go over the
    // test's kept gateway connection): it exits 0 and prints the final answer as JSON. The report
    // is not posted again (the next restart, below, checks every delivered report the same way).
    const asked = await openclawAgentCli(home, gateway, SESSION, "Anything new?");
    expect(asked.code, asked.stderr).toBe(0);
    expect(["ok", "completed"]).toContain((JSON.parse(asked.stdout) as { status?: string }).status);
    expect(turnsAbout("SHIPPED-WHILE-DOWN")).toHaveLength(1);
  });

  it("shows two reports one after the other, each by a turn of its own with no heartbeat to wait for, once each, in the session's history", async () => {
    const latencies: number[] = [];
    const ids: string[] = [];
    for (const round of [1, 2]) {
      const needle = `SHIPPED-APART-${round}`;
      firstSeen.set(needle, 0);
      const dispatch = await dispatchFromChat(`Add apart-${round}.txt and commit it`);
      const id = dispatch.id as string;
      ids.push(id);
      await runDaemonUntilDone(id, `apart-${round}.txt`, `apart-${round}.txt ${needle}`);
      const completedAt = (await stat(world.layout.dispatch.completedJson(id))).mtimeMs;
      // With the heartbeat off, only the plugin's own turn can bring it (see beforeAll).
      const seenAt = await waitFor(() => firstSeen.get(needle) || undefined, 120_000);
      latencies.push(seenAt - completedAt);
      if (round === 1) {
        // The second report comes only once the first one's turn is over and nothing of it is
        // left to deliver (recorded delivered, out of the outbox): no turn of the first can
        // carry it, and with the heartbeat off nothing else would, so its own turn must.
        await waitFor(async () => {
          const delivered = await stat(join(home.stateDir, "gstack", "delivered", `${id}.json`)).catch(
            () => undefined,
          );
          const queued = await stat(join(home.stateDir, "gstack", "outbox", `${id}.json`)).catch(
            () => undefined,
          );
          return delivered && !queued ? true : undefined;
        }, 120_000);
      }
    }
    // For the log only: speed is measured in bench/report-latency.bench.ts, not asserted here.
    console.log(`report latencies from the completion file (ms): ${latencies.join(", ")}`);
    const transcript = await transcriptText();
    for (const [index, id] of ids.entries()) {
      expect(turnsAbout(`SHIPPED-APART-${index + 1}`)).toHaveLength(1);
      expect(occurrences(transcript, markerOf(id))).toBeGreaterThan(0);
      await waitFor(
        () => stat(join(home.stateDir, "gstack", "delivered", `${id}.json`)).catch(() => undefined),
        30_000,
      );
    }
    // The later turn still has the earlier report in its context.
    expect(lastConversation()).toContain(markerOf(ids[0] as string));
  });

  it("after a kill, shows once each a report that waited behind a running turn and one whose own turn was running, and posts no delivered report again", async () => {
    // Two sessions, each cut off by one kill of the gateway: in the main session a person's turn
    // is running (held at the model) and a report waits behind it, its turn queued; in another
    // session a report's own turn is running (held at the model).
    const midTurnSession = "agent:main:mid-turn";
    const queued = (await dispatchFromChat("Add queued.txt and commit it")).id as string;
    holds.add("HOLD-THIS-TURN");
    const held = agentTurn(gateway, SESSION, "Think about this for a long time. HOLD-THIS-TURN");
    await waitFor(() => turnsAbout("HOLD-THIS-TURN")[0], 60_000);
    await runDaemonUntilDone(queued, "queued.txt", "queued.txt SHIPPED-WHILE-QUEUED");
    const outboxFile = join(home.stateDir, "gstack", "outbox", `${queued}.json`);
    await waitFor(async () => {
      const entry = JSON.parse(await readFile(outboxFile, "utf8").catch(() => "{}")) as { run_id?: string };
      return entry.run_id;
    }, loadBudget(60_000));
    // Dispatched once the first has run: a daemon runs whatever is waiting, with its one script.
    const midTurn = (await dispatchFromChat("Add midturn.txt and commit it", midTurnSession)).id as string;
    holds.add("SHIPPED-MID-TURN");
    await runDaemonUntilDone(midTurn, "midturn.txt", "midturn.txt SHIPPED-MID-TURN");
    await waitFor(() => turnsAbout("SHIPPED-MID-TURN")[0], 60_000);
    expect(turnsAbout("SHIPPED-WHILE-QUEUED")).toHaveLength(0);
    // Every report delivered so far, and how many requests the agent was given for it as their
    // newest text (the turns that brought it).
    const deliveredBefore = (await readdir(join(home.stateDir, "gstack", "delivered")))
      .filter((name) => name.endsWith(".json"))
      .map((name) => name.slice(0, -".json".length));
    expect(deliveredBefore.length).toBeGreaterThan(0);
    const reportTurns = (id: string) =>
      openclawModel.agentRequests().filter((request) => newestUserText(request).includes(markerOf(id)))
        .length;
    const reportTurnsBefore = new Map(deliveredBefore.map((id) => [id, reportTurns(id)]));
    await gateway.kill();
    await held;
    for (const id of [queued, midTurn]) {
      expect(
        await stat(join(home.stateDir, "gstack", "delivered", `${id}.json`)).catch(() => undefined),
      ).toBeUndefined();
    }

    gateway = await startGateway();
    startups.push(gateway.startupMs);
    for (const id of [queued, midTurn]) {
      await waitFor(
        () => stat(join(home.stateDir, "gstack", "delivered", `${id}.json`)).catch(() => undefined),
        120_000,
      );
    }
    for (const [id, session] of [
      [queued, SESSION],
      [midTurn, midTurnSession],
    ] as const) {
      // Shown in its session; no request the agent got holds it twice (it was not posted twice),
      // and the newest one about it holds it once.
      expect(occurrences(await transcriptText(session), markerOf(id))).toBeGreaterThan(0);
      const about = openclawModel
        .agentRequests()
        .filter((request) => occurrences(JSON.stringify(request.body?.messages), markerOf(id)) > 0);
      expect(
        about.filter((request) => occurrences(JSON.stringify(request.body?.messages), markerOf(id)) > 1),
      ).toHaveLength(0);
      expect(occurrences(JSON.stringify(about.at(-1)?.body?.messages), markerOf(id))).toBe(1);
    }
    // A report delivered before the kill is not posted again by the restarted gateway: no turn
    // brought it again (a later turn of its session still carries it as history).
    for (const id of deliveredBefore) expect(reportTurns(id), id).toBe(reportTurnsBefore.get(id));
  });

  it("brings each report to the session that asked for it, and to no other", async () => {
    const other = "agent:main:other";
    const mine = await dispatchFromChat("Add other-session.txt and commit it", other);
    expect(mine.reply_to).toMatchObject({ session_key: other });
    const id = mine.id as string;
    await runDaemonUntilDone(id, "other-session.txt", "other-session.txt SHIPPED-ELSEWHERE");
    await waitFor(
      () => stat(join(home.stateDir, "gstack", "delivered", `${id}.json`)).catch(() => undefined),
      120_000,
    );
    expect(occurrences(await transcriptText(other), markerOf(id))).toBeGreaterThan(0);
    expect(occurrences(await transcriptText(SESSION), markerOf(id))).toBe(0);
    expect(turnsAbout("SHIPPED-ELSEWHERE")).toHaveLength(1);
  });

  it("accepts a signed completion callback once and refuses forged, replayed, stale, oversized and malformed ones", async () => {
    const dispatch = await dispatchFromChat("Add third.txt (reported by callback)");
    const id = dispatch.id as string;
    const url = `${gateway.url}/gstack/completion`;
    const bodyOf = (marker: string) =>
      JSON.stringify({
        type: "gstack.dispatch.completion",
        dispatch_id: id,
        sent_at: new Date().toISOString(),
        completion: { dispatch_id: id, status: "completed", duration: 4, commits: 1 },
        summary: `Added third.txt ${marker}`,
        needs_judgment: ["Confirm the file name"],
      });
    const post = (body: string, headers: Record<string, string>) =>
      fetch(url, {
        method: "POST",
        body,
        headers: { "content-type": "application/json", "idempotency-key": id, ...headers },
      });

    const forgedBody = bodyOf("FORGED");
    const forged = await post(forgedBody, signCallback(forgedBody, "not-the-secret"));
    expect(forged.status).toBe(401);

    const staleBody = bodyOf("STALE");
    const stale = await post(
      staleBody,
      signCallback(staleBody, CALLBACK_SECRET, new Date(Date.now() - 3600_000)),
    );
    expect(stale.status).toBe(401);
    expect(((await stale.json()) as { reason: string }).reason).toBe("stale");

    const huge = "x".repeat(300 * 1024);
    const oversized = await post(huge, signCallback(huge, CALLBACK_SECRET));
    expect(oversized.status).toBe(413);

    const malformed = "{not json";
    const bad = await post(malformed, signCallback(malformed, CALLBACK_SECRET));
    expect(bad.status).toBe(400);

    const goodBody = bodyOf("BY-CALLBACK");
    const headers = signCallback(goodBody, CALLBACK_SECRET);
    const accepted = await post(goodBody, headers);
    expect(accepted.status, await accepted.clone().text()).toBe(200);
    await waitFor(() => turnsAbout("BY-CALLBACK")[0], 90_000);

    const replayed = await post(goodBody, headers);
    expect(replayed.status).toBe(409);
    const againBody = bodyOf("BY-CALLBACK-AGAIN");
    const again = await post(againBody, signCallback(againBody, CALLBACK_SECRET));
    expect(((await again.json()) as { outcome: string }).outcome).toBe("already-delivered");

    expect(turnsAbout("FORGED")).toHaveLength(0);
    expect(turnsAbout("STALE")).toHaveLength(0);
    expect(gateway.running()).toBe(true);
    const health = await fetch(`${gateway.url}/health`);
    expect(health.status).toBeLessThan(500);
  });

  it("takes a remote daemon's own signed callback into the session that asked", async () => {
    // Another machine: its own gstack root and repository; nothing reaches the plugin through
    // the completed/ folder it follows, only through the daemon's POST to the route.
    const remote = await makeGstackWorld();
    const id = "dispatch-from-a-remote-daemon";
    let coding: Awaited<ReturnType<typeof startCodingDaemon>> | undefined;
    try {
      await writeFile(remote.layout.callbackSecret, CALLBACK_SECRET, { mode: 0o600 });
      await chmod(remote.layout.callbackSecret, 0o600);
      coding = await startCodingDaemon(remote, coderScript("remote-route.txt", "remote-route.txt"), {
        openclaw_callback_url: `${gateway.url}/gstack/completion`,
      });
      await submitDispatch(remote.layout, {
        id,
        dispatched_by: "openclaw",
        task: "Add remote-route.txt and commit it",
        project: "acme-widget",
        project_dir: remote.repo,
        reply_to: { runtime: "openclaw", session_key: SESSION },
      });
      const turn = await waitFor(() => turnsAbout("Is remote-route.txt the right name?")[0], 150_000);
      expect(newestUserText(turn)).toContain(id);
      await waitFor(
        () =>
          stat(join(remote.layout.dispatch.sessionDir(id), "delivery-done.json")).then(
            () => true,
            () => undefined,
          ),
        30_000,
      );
      expect(turnsAbout("Is remote-route.txt the right name?")).toHaveLength(1);
    } finally {
      await coding?.stop();
      await remote.remove();
    }
  });

  it("lets OpenClaw's memory search find gstack's learnings, with their provenance", async () => {
    // The first dispatch's report logged "Commits here need no hooks" for acme-widget.
    const before = openclawModel.agentRequests().length;
    const call = { id: "memory_search", args: { query: "commits hooks", corpus: "all" } };
    const turn = await agentTurn(gateway, SESSION, `Search memory. ${TOOL_MARKER}${JSON.stringify(call)}`);
    expect(turn.code, turn.stderr).toBe(0);
    const answered = openclawModel
      .agentRequests()
      .slice(before)
      .map((request) => JSON.stringify((request.body?.messages as unknown[] | undefined)?.at(-2) ?? ""))
      .find((text) => text.includes("tool_result"));
    expect(answered).toContain("Commits here need no hooks");
    expect(answered).toContain("gstack learning of acme-widget");
  });
});

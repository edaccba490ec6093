import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { parseValue } from "@gstack/contracts";
import { type ApiResponse, type ApiTarget, apiRequest } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import type { Daemon } from "../daemon";
import { useDaemonWorld } from "../daemon-test-world";
import { startRunnerAgent } from "../run/runner-agent";
import { auditOf, completionOf, dispatchFor, type TestWorld, testDaemon, waitFor } from "../test-support";

/**
 * Many clients at once on the real socket, against a real daemon with real agents and files:
 * every spawn is answered once, none is lost or run twice, the line keeps its order, and
 * duplicates, cancels and a full queue are answered as they are one at a time.
 */

const daemonWorld = useDaemonWorld();
let world: TestWorld;
let daemon: Daemon | undefined;

beforeEach(() => {
  world = daemonWorld.world;
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
});

// What a burst may take on an idle machine, grown with the load (its waits grow the same way).
const BURST_TIMEOUT_MS = loadBudget(120_000);
const CLIENTS = 8;
const PER_CLIENT = 25;

const socket = (): ApiTarget => ({ socketPath: world.layout.dispatch.apiSocket });

const burstId = (client: number, index: number) =>
  `dispatch-burst-c${client}-${String(index).padStart(2, "0")}`;

function spawnOver(id: string, task: string): Promise<ApiResponse> {
  const dispatch = dispatchFor(world, id, task);
  return apiRequest(socket(), "POST", "/v1/sessions", {
    body: JSON.stringify({ dispatch: JSON.stringify(dispatch) }),
    timeoutMs: 100_000,
  });
}

function cancelOver(id: string): Promise<ApiResponse> {
  return apiRequest(socket(), "POST", "/v1/cancel", {
    body: JSON.stringify({ dispatch_id: id, reason: "burst cancel" }),
    timeoutMs: 100_000,
  });
}

/** How many times the agent was started for `id` (each start appends its prompt). */
async function runsOf(id: string): Promise<number> {
  try {
    return (await readFile(join(world.base, "prompts.log"), "utf8"))
      .split("\n")
      .filter((line) => line.includes(`"id":"${id}"`)).length;
  } catch {
    return 0;
  }
}

async function completedIds(): Promise<string[]> {
  return (await readdir(world.layout.dispatch.completed))
    .filter((name) => name.startsWith("dispatch-burst-") && name.endsWith(".json"))
    .map((name) => name.slice(0, -".json".length));
}

const eventsFor = (audit: Array<Record<string, unknown>>, event: string, ids: Set<string>) =>
  audit.filter((entry) => entry.event === event && ids.has(String(entry.dispatch_id)));

describe("a burst of spawns over the socket", () => {
  it(
    "takes 200 spawns from 8 clients at once: each once, in queue order, duplicates refused, cancels applied",
    async () => {
      // The burst is about the API and the queue; its agents touch no files, so they run in place
      // rather than paying for 200 worktrees.
      daemon = testDaemon(
        world,
        { retryDelayMs: { rateLimit: 20, other: 20 } },
        { max_concurrent: 2, in_place_projects: ["acme-widget"] },
      );
      await daemon.start();

      // Cancelled once their agent runs: these never end on their own, so the cancel finds them running.
      const cancelWhenRunning = new Set([burstId(0, 5), burstId(3, 12), burstId(6, 20)]);
      // Cancelled as soon as their 202 arrives, mostly still queued; a long sleep, so one that did
      // start is still running when the cancel lands.
      const cancelOnAccept = new Set([
        burstId(1, 2),
        burstId(2, 8),
        burstId(4, 4),
        burstId(5, 16),
        burstId(7, 10),
        burstId(0, 18),
        burstId(3, 1),
      ]);
      // Cancelled once its completion exists: the cancel must change nothing.
      const cancelWhenDone = burstId(2, 0);
      const targets = new Set([...cancelWhenRunning, ...cancelOnAccept, cancelWhenDone]);
      const taskOf = (id: string) =>
        cancelWhenRunning.has(id) ? "hang" : cancelOnAccept.has(id) ? "sleep 3000" : "sleep 1";
      // Sent a second time by another client at the same moment: exactly one of the two is taken.
      const twin = burstId(4, 0);

      const all = Array.from({ length: CLIENTS }, (_, client) =>
        Array.from({ length: PER_CLIENT }, (_, index) => burstId(client, index)),
      );
      const allIds = new Set(all.flat());
      const answers = new Map<string, ApiResponse[]>();
      const record = (id: string, answer: ApiResponse) =>
        answers.set(id, [...(answers.get(id) ?? []), answer]);
      let unanswered = CLIENTS * PER_CLIENT;
      const cancels = new Map<string, { answer: ApiResponse; unansweredWhenSent: number }>();
      const sideWork: Array<Promise<unknown>> = [];
      const cancel = (id: string) => {
        const unansweredWhenSent = unanswered;
        return cancelOver(id).then((answer) => cancels.set(id, { answer, unansweredWhenSent }));
      };
      let respawn: Promise<{ id: string; answer: ApiResponse }> | undefined;
      let doneReportBefore: string | undefined;

      const clients = all.map((ids, client) =>
        Promise.all(
          ids.map(async (id) => {
            const answer = await spawnOver(id, taskOf(id));
            unanswered -= 1;
            record(id, answer);
            if (answer.status !== 202) return;
            if (client === 0 && respawn === undefined) {
              // The first id this client had taken, offered again while the burst is in flight.
              respawn = spawnOver(id, "sleep 1").then((again) => ({ id, answer: again }));
            }
            if (cancelOnAccept.has(id)) sideWork.push(cancel(id));
            if (cancelWhenRunning.has(id)) {
              sideWork.push(
                // The agent itself has started (its prompt is logged), not only the launch.
                waitFor(async () => ((await runsOf(id)) === 1 ? true : undefined), 100_000).then(() =>
                  cancel(id),
                ),
              );
            }
            if (id === cancelWhenDone) {
              sideWork.push(
                waitFor(() => completionOf(world.layout, id), 100_000).then(async () => {
                  doneReportBefore = await readFile(world.layout.dispatch.completedJson(id), "utf8");
                  await cancel(id);
                }),
              );
            }
          }),
        ),
      );
      const twinAnswer = spawnOver(twin, "sleep 1");
      await Promise.all(clients);
      const twinSecond = await twinAnswer;
      await Promise.all(sideWork);
      const respawned = await respawn;

      // Every spawn answered exactly once with 202, but the twin, of which exactly one copy is taken.
      for (const id of allIds) {
        const got = answers.get(id) ?? [];
        expect({ id, answers: got.length }).toEqual({ id, answers: 1 });
        if (id === twin) continue;
        expect({ id, status: got[0]?.status }).toEqual({ id, status: 202 });
      }
      const twinStatuses = [answers.get(twin)?.[0]?.status, twinSecond.status].sort();
      expect(twinStatuses).toEqual([202, 409]);
      const twinRefusal = answers.get(twin)?.[0]?.status === 409 ? answers.get(twin)?.[0] : twinSecond;
      expect(twinRefusal?.body).toMatchObject({ error: "duplicate", rule: "duplicate", dispatch_id: twin });
      expect(respawned?.answer.status).toBe(409);
      expect(respawned?.answer.body).toMatchObject({
        error: "duplicate",
        rule: "duplicate",
        dispatch_id: respawned?.id,
      });
      const positions = new Map<string, number>();
      for (const id of allIds) {
        const accepted =
          answers.get(id)?.[0]?.status === 202 ? answers.get(id)?.[0] : id === twin ? twinSecond : undefined;
        const body = parseValue("spawn-answer", accepted?.body);
        expect(body).toMatchObject({ accepted: true, dispatch_id: id, status: "queued" });
        positions.set(id, body.position);
      }

      // No id lost: every one reaches exactly one completion.
      await waitFor(async () => ((await completedIds()).length >= allIds.size ? true : undefined), 100_000);
      await daemon.idle();
      expect(new Set(await completedIds())).toEqual(allIds);

      // The cancels: each asked one ended cancelled, or had ended and was left as it was.
      expect(new Set(cancels.keys())).toEqual(targets);
      const outcomes = new Map<string, string>();
      for (const [id, { answer }] of cancels) {
        expect({ id, status: answer.status }).toEqual({ id, status: 200 });
        const body = parseValue("cancel-answer", answer.body);
        outcomes.set(id, body.outcome);
        const completion = await completionOf(world.layout, id);
        if (body.outcome === "finished") {
          expect({ id, changed: body.changed }).toEqual({ id, changed: false });
          expect({ id, status: completion?.status }).toEqual({ id, status: body.status });
        } else {
          expect({ id, outcome: body.outcome }).toEqual({
            id,
            outcome: expect.stringMatching(/^(cancelled|cancelling)$/),
          });
          expect({ id, status: completion?.status }).toEqual({ id, status: "cancelled" });
        }
      }
      for (const id of cancelWhenRunning)
        expect({ id, outcome: outcomes.get(id) }).toEqual({ id, outcome: "cancelling" });
      expect({ id: cancelWhenDone, outcome: outcomes.get(cancelWhenDone) }).toEqual({
        id: cancelWhenDone,
        outcome: "finished",
      });
      expect((await completionOf(world.layout, cancelWhenDone))?.status).toBe("completed");
      expect(await readFile(world.layout.dispatch.completedJson(cancelWhenDone), "utf8")).toBe(
        doneReportBefore,
      );
      // Some were still waiting in the line when cancelled, and cancels went while spawns were unanswered.
      expect([...cancelOnAccept].some((id) => outcomes.get(id) === "cancelled")).toBe(true);
      expect([...cancels.values()].some((sent) => sent.unansweredWhenSent > 0)).toBe(true);

      // Nothing else was cancelled, and every agent ran once (none for a dispatch cancelled in the line).
      for (const id of allIds) {
        const completion = await completionOf(world.layout, id);
        const runs = await runsOf(id);
        if (targets.has(id) && id !== cancelWhenDone) {
          expect({ id, runs }).toEqual({ id, runs: outcomes.get(id) === "cancelled" ? 0 : runs });
          expect(runs).toBeLessThanOrEqual(1);
          continue;
        }
        expect({ id, status: completion?.status, runs }).toEqual({ id, status: "completed", runs: 1 });
      }
      for (const id of cancelWhenRunning) expect({ id, runs: await runsOf(id) }).toEqual({ id, runs: 1 });

      const audit = await auditOf(world.layout);
      // Taken once each: one validated and one queued event per id, the positions the 202s gave.
      const queued = eventsFor(audit, "queued", allIds);
      expect(queued).toHaveLength(allIds.size);
      expect(new Set(queued.map((entry) => entry.dispatch_id))).toEqual(allIds);
      expect(eventsFor(audit, "validated", allIds)).toHaveLength(allIds.size);
      for (const entry of queued) {
        const id = String(entry.dispatch_id);
        expect({ id, position: (entry.detail as { position: number }).position }).toEqual({
          id,
          position: positions.get(id),
        });
      }
      // One end each, as its completion says: cancelled only for the cancelled ones.
      const terminal = audit.filter(
        (entry) =>
          allIds.has(String(entry.dispatch_id)) &&
          ["completed", "failed", "cancelled", "timeout"].includes(String(entry.event)),
      );
      expect(terminal).toHaveLength(allIds.size);
      for (const entry of terminal) {
        const id = String(entry.dispatch_id);
        expect({ id, event: entry.event }).toEqual({
          id,
          event: (await completionOf(world.layout, id))?.status,
        });
      }
      expect(
        terminal
          .filter((entry) => entry.event === "cancelled")
          .map((entry) => String(entry.dispatch_id))
          .sort(),
      ).toEqual([...targets].filter((id) => outcomes.get(id) !== "finished").sort());
      const duplicates = audit.filter(
        (entry) => entry.event === "rejected" && String(entry.reason).startsWith("duplicate:"),
      );
      expect(duplicates.map((entry) => entry.dispatch_id).sort()).toEqual([respawned?.id, twin].sort());

      // Queue order: intake takes one offer at a time, so the queued events are the acceptance
      // order. Each dispatch is taken from the line (its started_at, set as the runner takes it)
      // no earlier than any accepted before it.
      const acceptance = queued.map((entry) => String(entry.dispatch_id));
      const startedAt = new Map<string, number>();
      for (const id of acceptance) {
        const started = (await completionOf(world.layout, id))?.started_at;
        if (typeof started === "string") startedAt.set(id, Date.parse(started));
      }
      const startedInAcceptanceOrder = acceptance.filter((id) => startedAt.has(id));
      for (let index = 1; index < startedInAcceptanceOrder.length; index += 1) {
        const earlier = startedInAcceptanceOrder[index - 1] as string;
        const later = startedInAcceptanceOrder[index] as string;
        expect({
          earlier,
          later,
          inOrder: (startedAt.get(earlier) ?? 0) <= (startedAt.get(later) ?? 0),
        }).toEqual({
          earlier,
          later,
          inOrder: true,
        });
      }
      const spawned = eventsFor(audit, "spawned", allIds).map((entry) => String(entry.dispatch_id));
      expect(new Set(spawned).size).toBe(spawned.length);
      expect(spawned.length).toBe(
        (await readFile(join(world.base, "prompts.log"), "utf8")).split("\n").filter(Boolean).length,
      );
      // The agents of two slots are launched side by side, so of two taken from the line
      // together either may be spawned first; beyond that, spawns keep the acceptance order:
      // no dispatch is spawned more than (max_concurrent - 1) places from its turn.
      const spawnedTurns = acceptance.filter((id) => spawned.includes(id));
      const displaced = spawned.flatMap((id, index) => {
        const turn = spawnedTurns.indexOf(id);
        return Math.abs(index - turn) > 1
          ? [`${id}: spawned ${index + 1}th, its turn was ${turn + 1}th`]
          : [];
      });
      expect(displaced).toEqual([]);
      // Nothing is left running or waiting.
      const list = parseValue("list-sessions", (await apiRequest(socket(), "GET", "/v1/sessions")).body);
      expect(list).toMatchObject({ active: 0, queued: 0 });
    },
    BURST_TIMEOUT_MS,
  );

  /** A daemon at max_queued 20 with one dispatch running (until the end) and twenty waiting. */
  async function fullLine(): Promise<(index: number) => string> {
    daemon = testDaemon(world, {}, { max_concurrent: 1, max_queued: 20 });
    await daemon.start();
    const id = (index: number) => `dispatch-full-${String(index).padStart(2, "0")}`;
    expect((await spawnOver(id(0), "hang")).status).toBe(202);
    await waitFor(async () => ((await runsOf(id(0))) === 1 ? true : undefined));
    for (let index = 1; index <= 20; index += 1) {
      const answer = await spawnOver(id(index), "hang");
      expect({ index, status: answer.status, body: answer.body }).toMatchObject({
        index,
        status: 202,
        body: { position: index },
      });
    }
    return id;
  }

  /** Nothing of a refused spawn is kept: no claimed file, no session, not in the audit log, never run. */
  async function nothingKeptOf(ids: string[]): Promise<void> {
    const audit = await auditOf(world.layout);
    for (const refused of ids) {
      await expect(stat(world.layout.dispatch.claimedFile(refused))).rejects.toThrow();
      await expect(stat(join(world.layout.dispatch.sessionDir(refused), "state.json"))).rejects.toThrow();
      // The refusal is audited, like every refusal, and nothing else happened to it.
      expect(
        audit
          .filter((entry) => entry.dispatch_id === refused)
          .map((entry) => [entry.event, String(entry.reason).split(":")[0]]),
      ).toEqual([["rejected", "queue_full"]]);
      expect(await runsOf(refused)).toBe(0);
    }
  }

  it(
    "at max_queued, refuses every spawn over the limit with 429 queue_full and keeps none of them",
    async () => {
      const id = await fullLine();
      // The line is full: ten more at once are all refused, each with when to try again.
      const over = Array.from({ length: 10 }, (_, index) => id(21 + index));
      const refused = await Promise.all(over.map((overId) => spawnOver(overId, "sleep 1")));
      for (const [index, answer] of refused.entries()) {
        expect({ id: over[index], status: answer.status }).toEqual({ id: over[index], status: 429 });
        const body = parseValue("callback-error", answer.body);
        expect(body.error).toBe("queue_full");
        expect(body.retry_after_seconds).toBeGreaterThanOrEqual(5);
        expect(answer.headers["retry-after"]).toBe(String(body.retry_after_seconds));
      }
      await nothingKeptOf(over);
      // One leaves the line: the next spawn fits, the one after it does not.
      expect((await cancelOver(id(20))).body).toMatchObject({ outcome: "cancelled" });
      expect((await spawnOver(id(31), "sleep 1")).status).toBe(202);
      const after = await spawnOver(id(32), "sleep 1");
      expect(after.status).toBe(429);
      await nothingKeptOf([id(32)]);
      const list = parseValue("list-sessions", (await apiRequest(socket(), "GET", "/v1/sessions")).body);
      expect(list).toMatchObject({ active: 1, queued: 20 });
    },
    BURST_TIMEOUT_MS,
  );

  // The queue_full check is made inside intake, one offer at a time: spawns that arrive together
  // cannot all pass it (they did when it was read before the offer waited its turn).
  it(
    "at max_queued with room for one, of ten spawns at once exactly one is taken",
    async () => {
      const id = await fullLine();
      expect((await cancelOver(id(20))).body).toMatchObject({ outcome: "cancelled" });
      const edge = Array.from({ length: 10 }, (_, index) => id(31 + index));
      const answers = await Promise.all(edge.map((edgeId) => spawnOver(edgeId, "sleep 1")));
      const list = parseValue("list-sessions", (await apiRequest(socket(), "GET", "/v1/sessions")).body);
      expect(list.queued).toBeLessThanOrEqual(20);
      expect(answers.filter((answer) => answer.status === 202)).toHaveLength(1);
      await nothingKeptOf(edge.filter((_, index) => answers[index]?.status === 429));
    },
    BURST_TIMEOUT_MS,
  );

  // A cancel that arrives after the agent has exited but before its run is wound down (the
  // runner's `done` still stops the group, waits for the output and asks git) must not be
  // answered `changed: true` for a dispatch that then ends completed. Here the wind-down is held
  // open 500 ms so the cancel lands in it every time.
  it(
    "a cancel answered changed: true ends the dispatch cancelled, even in the agent's wind-down",
    async () => {
      let exited = false;
      daemon = testDaemon(world, {
        startAgent: (options) => {
          const agent = startRunnerAgent(options);
          const done = agent.done.then(async (result) => {
            exited = true;
            await new Promise((resolve) => setTimeout(resolve, 500));
            return result;
          });
          return { ...agent, done };
        },
      });
      await daemon.start();
      expect((await spawnOver("dispatch-wind-down", "sleep 1")).status).toBe(202);
      await waitFor(() => (exited ? true : undefined));
      const answer = parseValue("cancel-answer", (await cancelOver("dispatch-wind-down")).body);
      const completion = await waitFor(() => completionOf(world.layout, "dispatch-wind-down"));
      expect({ changed: answer.changed, status: completion.status }).toEqual(
        answer.changed ? { changed: true, status: "cancelled" } : { changed: false, status: answer.status },
      );
    },
    BURST_TIMEOUT_MS,
  );
});

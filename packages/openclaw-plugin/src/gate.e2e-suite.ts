import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { type Completion, parseJson } from "@gstack/contracts";
import type { OpenClawGateway, OpenClawHome } from "@gstack/openclaw-testbed";
import { type ScriptedModel, scripted } from "@gstack/scripted-model";
import { beforeAll, describe, expect, it } from "vitest";
import { loadBudget } from "../../../vitest.load-budget";
import { awaitingKey } from "./awaiting-message";
import { completionKey } from "./completion-message";
import { newestUserText, TOOL_MARKER } from "./openclaw-scripts";
import {
  agentTurn,
  chatHistory,
  dispatchFromChat,
  type GstackWorld,
  gstackRunWrites,
  startCodingDaemon,
  waitFor,
} from "./openclaw-world";
import type { SharedGateway } from "./real-gateway-world";
import { reportMarker } from "./report-outbox";

const SESSION = "agent:main:gate";
const RUN = "r7";

let world: GstackWorld;
let openclawModel: ScriptedModel;
let home: OpenClawHome;
let gateway: OpenClawGateway;

/** Model requests of the OpenClaw agent whose turn is about `needle`. */
const turnsAbout = (needle: string) =>
  openclawModel.agentRequests().filter((request) => newestUserText(request).includes(needle));

/** User-side messages of the session's history (what the person sees) holding `needle`. */
async function historyHolding(needle: string) {
  const history = await chatHistory(gateway, SESSION);
  return history.filter((message) => message.role !== "assistant" && message.text.includes(needle));
}

const delivered = (slot: string) =>
  stat(join(home.stateDir, "gstack", "delivered", `${slot}.json`)).catch(() => undefined);

/** The init event of an agent run of the dispatch (its session and cwd). */
async function initOf(id: string, attempt: number) {
  const stream = await readFile(
    join(world.layout.dispatch.sessionDir(id), `stream-${attempt}.jsonl`),
    "utf8",
  );
  return JSON.parse(stream.split("\n").find((line) => line.includes('"init"')) ?? "{}") as {
    session_id?: string;
    cwd?: string;
  };
}

/**
 * The text of a tool result as OpenClaw gives it to the model: its tool search wraps the tool's
 * answer as JSON (`{tool: {name}, result: {content: [{text}]}}`).
 */
function toolResultText(content: unknown): string {
  const raw = typeof content === "string" ? content : JSON.stringify(content ?? "");
  try {
    const wrapped = JSON.parse(raw) as {
      tool?: { name?: string };
      result?: { content?: { text?: string }[] };
    };
    const text = (wrapped.result?.content ?? []).map((block) => block.text ?? "").join("\n");
    return `${wrapped.tool?.name ?? ""}: ${text}`;
  } catch {
    return raw;
  }
}

/** The user's word to the OpenClaw agent that makes it call `gstack_answer` with `args`; the tool's answer. */
async function answerFromChat(words: string, args: Record<string, unknown>): Promise<string> {
  const before = openclawModel.agentRequests().length;
  const turn = await agentTurn(
    gateway,
    SESSION,
    `${words} ${TOOL_MARKER}${JSON.stringify({ id: "gstack_answer", args })}`,
  );
  expect(turn.code, turn.stderr).toBe(0);
  // The tool's result, as the agent was given it in the turn's next model request.
  const results = openclawModel
    .agentRequests()
    .slice(before)
    .flatMap((request) => (request.body as { messages?: { content?: unknown }[] }).messages ?? [])
    .flatMap((message) => (Array.isArray(message.content) ? message.content : []))
    .filter((block: { type?: string }) => block.type === "tool_result")
    .map((block: { content?: unknown }) => toolResultText(block.content))
    .filter((text) => text.includes("gstack_answer"));
  expect(results, "the gstack_answer tool result in the agent's conversation").not.toHaveLength(0);
  return results.at(-1) as string;
}

/** What the daemon keeps of a dispatch (state, audit, waiting notice): an answer refused changes none of it. */
async function daemonRecordOf(id: string) {
  const read = (path: string) => readFile(path, "utf8").catch(() => "(none)");
  return {
    state: await read(join(world.layout.dispatch.sessionDir(id), "state.json")),
    audit: await read(world.layout.dispatch.audit),
    notice: await read(world.layout.dispatch.awaitingJson(id)),
  };
}

const REPORT = (shipped: string) =>
  [
    "Planned the search fix with /autoplan.",
    "## What shipped",
    `- ${shipped}`,
    "## Decisions made",
    "- none",
    "## Learnings logged",
    "- none",
    "## Needs human judgment",
    "- None",
  ].join("\n");

/** The decisions of the gated run: one decided on its own, two waiting for the person. */
const GATED_DECISIONS = [
  {
    label: "d1",
    title: "Reuse the existing query parser",
    options: ["Reuse the parser", "Write a new parser"],
    recommended: "Reuse the parser",
    kind: "auto",
    status: "approved",
    chosen: "Reuse the parser",
  },
  {
    label: "d2",
    title: "Drop the session cache",
    options: ["Keep the cache and expire it hourly", "Drop the cache"],
    recommended: "Keep the cache and expire it hourly",
    kind: "approval",
    status: "pending",
  },
  {
    label: "p1",
    title: "Approve the plan",
    options: ["Approve", "Revise the plan", "Stop here"],
    recommended: "Approve",
    kind: "approval",
    status: "pending",
  },
];

/**
 * A coder running gstack's /autoplan unattended: its run stops at the gate with d2 and p1
 * pending; resumed with the person's reply, it records the answer and completes.
 */
function gatedAutoplanScript(worktree: string) {
  const runDir = join(worktree, ".gstack", "runs", RUN);
  const [first, , third] = GATED_DECISIONS;
  const answered = [
    first,
    { ...GATED_DECISIONS[1], status: "overridden", chosen: "Drop the cache", reply: "all except d2b" },
    { ...third, status: "approved", chosen: "Approve", reply: "all except d2b" },
  ] as typeof GATED_DECISIONS;
  return [
    ...gstackRunWrites(runDir, { run: RUN, status: "gate_pending", gate_rev: 1, decisions: GATED_DECISIONS }),
    scripted.text(
      `${REPORT("a reviewed plan, waiting at its gate")}\n\nGSTACK_RESULT: skill=autoplan status=gate_pending run=.gstack/runs/${RUN}`,
    ),
    ...gstackRunWrites(runDir, { run: RUN, status: "complete", gate_rev: 1, decisions: answered }),
    scripted.text(
      `${REPORT("the search plan, cache dropped GATE-SHIPPED")}\n\nGSTACK_RESULT: skill=autoplan status=complete run=.gstack/runs/${RUN}`,
    ),
  ];
}

/** The gate's tests, on the gateway the suites share; the OpenClaw agent answers as scripted by default. */
export function gateSuite(shared: SharedGateway): void {
  // The real gateway, the packed plugin, the real daemon and the real Claude Code CLI.
  describe("a gstack gate answered from the OpenClaw session", { timeout: loadBudget(600_000) }, () => {
    beforeAll(() => {
      shared.respondWith();
      ({ world, model: openclawModel, home, gateway } = shared.real);
    });
    it("shows the numbered gate once, refuses a bare yes, resumes the agent with the reply and reports once", async () => {
      const dispatch = await dispatchFromChat(
        gateway,
        world,
        { task: "Plan the search fix with /autoplan", project: "acme-widget", project_dir: world.repo },
        SESSION,
      );
      expect(dispatch).toMatchObject({ reply_to: { session_key: SESSION } });
      const id = dispatch.id as string;
      // The daemon's worktree for the dispatch, where the agent runs and gstack writes its run.
      const worktree = join(world.root, "worktrees", "acme-widget", id);
      const coding = await startCodingDaemon(world, gatedAutoplanScript(worktree));
      try {
        // The gate arrives in the session that asked: the pending decisions numbered, with their
        // options as the grammar names them and the recommendation, and how to answer.
        const gateTurn = await waitFor(
          () => turnsAbout("stopped at a gstack gate")[0],
          180_000,
          "the gate in the session",
        );
        const gateText = newestUserText(gateTurn);
        expect(gateText).toContain(`gstack dispatch ${id} (acme-widget) stopped at a gstack gate`);
        expect(gateText).toContain(
          "1. d2: Drop the session cache. Options: d2a) Keep the cache and expire it hourly; d2b) Drop the cache (recommended: d2a).",
        );
        expect(gateText).toContain(
          "2. p1: Approve the plan. Options: p1a) Approve; p1b) Revise the plan; p1c) Stop here (recommended: p1a).",
        );
        // The decision gstack took on its own is not asked.
        expect(gateText).not.toContain("Reuse the existing query parser");
        expect(gateText).toContain(`gstack_answer with dispatch_id ${id}, answer reply, round 1`);
        expect(gateText).toContain("tokens such as d2b (decision d2, option b), or all except d2b.");
        // Every token it offers names a decision that waits.
        expect(gateText).not.toMatch(/\bd1[a-z]\b/);
        expect(gateText).toContain(`gstack-dispatch answer ${id} all | d2b … | all except d2b`);
        const marker = reportMarker(awaitingKey({ dispatch_id: id, round: 1 }));
        expect(gateText).toContain(marker);
        await waitFor(() => delivered(`${id}.awaiting-1`), 60_000, "the gate recorded as delivered");
        // What the person sees: the session's history holds the gate once, as the agent read it.
        const shown = await historyHolding(marker);
        expect(shown).toHaveLength(1);
        expect(shown[0]?.text).toContain("1. d2: Drop the session cache.");
        expect(shown[0]?.text).toContain("2. p1: Approve the plan.");
        expect(shown[0]?.text).toContain("answer reply, round 1");
        expect(await historyHolding("Drop the session cache")).toHaveLength(1);
        await expect(stat(world.layout.dispatch.completedJson(id))).rejects.toThrow();

        // A bare yes does not parse: refused by the tool with the grammar named, nothing written.
        const before = await daemonRecordOf(id);
        const coderRequests = coding.coder.agentRequests().length;
        const refused = await answerFromChat("yes", {
          dispatch_id: id,
          answer: "reply",
          text: "yes",
          round: 1,
        });
        expect(refused).toContain("Nothing was changed");
        expect(refused).toContain('a bare "yes" does not say which options you choose');
        expect(refused).toContain(`all | d2b … | all except d2b`);
        expect(refused).toContain("d2=a/b, p1=a/b/c");
        expect(await daemonRecordOf(id)).toEqual(before);
        expect(JSON.parse(before.state)).toMatchObject({ status: "awaiting" });
        expect(coding.coder.agentRequests()).toHaveLength(coderRequests);

        // The person's reply in gstack's grammar: the tool passes it on and the daemon takes it.
        const accepted = await answerFromChat("Keep the plan but drop the cache.", {
          dispatch_id: id,
          answer: "reply",
          text: "all except d2b",
          round: 1,
        });
        expect(accepted).toContain(`${id}: answered gate revision 1 with "all except d2b"`);

        const completionPath = world.layout.dispatch.completedJson(id);
        const completion = await waitFor(
          () =>
            readFile(completionPath, "utf8").then(
              (text) => parseJson("completion", text, { source: completionPath }) as Completion,
              () => undefined,
            ),
          180_000,
          `the completion of ${id}`,
        );
        expect(completion).toMatchObject({
          status: "completed",
          gstack_run: { status: "complete", check: "valid", run: RUN },
        });
        // The same agent session went on, in the same worktree, and its next model request
        // carried the reply exactly as the person gave it, with the gate revision.
        const gated = await initOf(id, 1);
        const resumed = await initOf(id, 2);
        expect(resumed.session_id).toBe(gated.session_id);
        expect(resumed.cwd).toBe(gated.cwd);
        const told = coding.coder
          .agentRequests()
          .filter((request) => JSON.stringify(request.body).includes("answered the gstack gate"));
        expect(told.length).toBeGreaterThan(0);
        const prompt = JSON.stringify(told[0]?.body);
        expect(prompt).toContain("all except d2b");
        expect(prompt).toContain("--gate-rev 1");
        expect(prompt).toContain(`.gstack/runs/${RUN}`);

        // The final report: in the session once, given to the agent in one turn, recorded once.
        await waitFor(() => delivered(id), 120_000, `the final report of ${id} in the session`);
        // The reply's run is a round of the same attempt, not a retry: the key names no attempt.
        expect(completionKey(completion)).toBe(`gstack:${id}:completed`);
        const arrived = turnsAbout("GATE-SHIPPED");
        expect(arrived).toHaveLength(1);
        expect(newestUserText(arrived[0] as never)).toContain(
          `gstack dispatch ${id} (acme-widget) finished.`,
        );
        expect(await historyHolding(reportMarker(completionKey(completion)))).toHaveLength(1);
        expect(await historyHolding("GATE-SHIPPED")).toHaveLength(1);
        // Nor was the gate posted again on the way.
        expect(turnsAbout("stopped at a gstack gate")).toHaveLength(1);
        expect(await historyHolding(marker)).toHaveLength(1);
        const audit = (await readFile(world.layout.dispatch.audit, "utf8"))
          .split("\n")
          .filter(Boolean)
          .map((line) => JSON.parse(line) as { event?: string; dispatch_id?: string; detail?: unknown });
        expect(audit.filter((event) => event.event === "answered" && event.dispatch_id === id)).toEqual([
          expect.objectContaining({ detail: { answer: "reply", round: 1 } }),
        ]);
      } finally {
        await coding.stop();
      }
    });
  });
}

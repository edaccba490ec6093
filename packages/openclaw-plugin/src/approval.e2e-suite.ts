import { execFileSync } from "node:child_process";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { type Completion, parseJson } from "@gstack/contracts";
import type { OpenClawGateway, OpenClawHome } from "@gstack/openclaw-testbed";
import type { ScriptedModel, ScriptedResponder } from "@gstack/scripted-model";
import { beforeAll, describe, expect, it } from "vitest";
import { loadBudget } from "../../../vitest.load-budget";
import { awaitingKey } from "./awaiting-message";
import { completionKey } from "./completion-message";
import { newestUserText, openclawAgentResponder, TOOL_MARKER } from "./openclaw-scripts";
import {
  agentTurn,
  chatHistory,
  dispatchFromChat,
  type GstackWorld,
  planThenExecuteScript,
  startCodingDaemon,
  startOpenClawGateway,
  waitFor,
} from "./openclaw-world";
import type { SharedGateway } from "./real-gateway-world";
import { reportMarker } from "./report-outbox";

const SESSION = "agent:main:approval";

let world: GstackWorld;
let openclawModel: ScriptedModel;
let home: OpenClawHome;
let gateway: OpenClawGateway;
/** Turns whose newest text contains one of these hang once (the model never answers them). */
const holds = new Set<string>();

/** The OpenClaw agent of these tests: as scripted, but a turn about one of `holds` hangs once. */
const respond: ScriptedResponder = (request) => {
  const fresh = newestUserText(request);
  for (const needle of holds) {
    if (fresh.includes(needle)) {
      holds.delete(needle);
      return { type: "hang" };
    }
  }
  return openclawAgentResponder(request);
};

/** Model requests of the OpenClaw agent whose turn is about `needle`. */
const turnsAbout = (needle: string) =>
  openclawModel.agentRequests().filter((request) => newestUserText(request).includes(needle));

/** User-side messages of the session's history holding `needle`: a report shows once. */
async function inHistory(needle: string): Promise<number> {
  const history = await chatHistory(gateway, SESSION);
  return history.filter((message) => message.role !== "assistant" && message.text.includes(needle)).length;
}

const deliveredFile = (slot: string) => join(home.stateDir, "gstack", "delivered", `${slot}.json`);
const delivered = (slot: string) => stat(deliveredFile(slot)).catch(() => undefined);

/** The init event of an agent run of the dispatch (its session, cwd and permission mode). */
async function initOf(id: string, attempt: number) {
  const stream = await readFile(
    join(world.layout.dispatch.sessionDir(id), `stream-${attempt}.jsonl`),
    "utf8",
  );
  return JSON.parse(stream.split("\n").find((line) => line.includes('"init"')) ?? "{}") as {
    session_id?: string;
    cwd?: string;
    permissionMode?: string;
  };
}

/** The user's word to the OpenClaw agent that makes it approve with the plugin's tool. */
async function approveFromChat(id: string, round: number) {
  const args = { id: "gstack_answer", args: { dispatch_id: id, answer: "approve", round } };
  const turn = await agentTurn(gateway, SESSION, `Yes, do it. ${TOOL_MARKER}${JSON.stringify(args)}`);
  expect(turn.code, turn.stderr).toBe(0);
  // The tool's own answer, as the agent was given it: the daemon took the approval.
  const result = openclawModel
    .agentRequests()
    .map((request) => JSON.stringify(request.body))
    .find((body) => body.includes("tool_result") && body.includes(`${id}: approved plan ${round}`));
  expect(result, "the gstack_answer tool result in the agent's conversation").toBeDefined();
}

/** The final report: once in the session, once in the delivered-ledger, and the commit on the branch. */
async function expectFinalReportOnce(id: string, shippedNeedle: string) {
  const completionPath = world.layout.dispatch.completedJson(id);
  const completion = await waitFor(
    () =>
      readFile(completionPath, "utf8").then(
        (text) => parseJson("completion", text, { source: completionPath }) as Completion,
        () => undefined,
      ),
    120_000,
    `the completion of ${id}`,
  );
  expect(completion).toMatchObject({ status: "completed", commits: 1, branch: `gstack/${id}` });
  await waitFor(() => delivered(id), 120_000, `the final report of ${id} in the session`);
  const arrived = turnsAbout(shippedNeedle);
  expect(arrived).toHaveLength(1);
  expect(newestUserText(arrived[0] as never)).toContain(`gstack dispatch ${id} (acme-widget) finished.`);
  // The run after the approval is a round of the same attempt, not a retry: its key names none.
  expect(completionKey(completion)).toBe(`gstack:${id}:completed`);
  expect(await inHistory(reportMarker(completionKey(completion)))).toBe(1);
  // Resumed, not started afresh: the planning session, in the same worktree, now allowed to edit.
  const planned = await initOf(id, 1);
  const executed = await initOf(id, 2);
  expect(planned.permissionMode).toBe("plan");
  expect(executed.permissionMode).not.toBe("plan");
  expect(executed.session_id).toBe(planned.session_id);
  expect(executed.cwd).toBe(planned.cwd);
  expect(
    execFileSync("git", ["-C", world.repo, "diff", "--name-only", "main", `gstack/${id}`], {
      encoding: "utf8",
    }).trim(),
  ).toMatch(/\.txt$/);
}

/** The approval's tests, on the gateway the suites share (one of them restarts it). */
export function approvalSuite(shared: SharedGateway): void {
  // Each test runs the real gateway, the real daemon and the real Claude Code CLI.
  describe("a plan-first dispatch approved from the OpenClaw session", {
    timeout: loadBudget(600_000),
  }, () => {
    beforeAll(() => {
      shared.respondWith(respond);
      ({ world, model: openclawModel, home, gateway } = shared.real);
    });
    it("shows the plan in the session, takes the approval by gstack_answer, resumes and reports once", async () => {
      const dispatch = await dispatchFromChat(
        gateway,
        world,
        {
          task: "Add approved.txt and commit it",
          project: "acme-widget",
          project_dir: world.repo,
          mode: "plan",
        },
        SESSION,
      );
      expect(dispatch).toMatchObject({ mode: "plan", reply_to: { session_key: SESSION } });
      const id = dispatch.id as string;
      const coding = await startCodingDaemon(
        world,
        planThenExecuteScript("approved.txt", "PLAN-ONE", "SHIPPED-APPROVED"),
      );
      try {
        // The plan arrives in the session that asked, with how to answer, and nothing is changed yet.
        const planTurn = await waitFor(() => turnsAbout("PLAN-ONE")[0], 120_000, "the plan in the session");
        const planText = newestUserText(planTurn);
        expect(planText).toContain(`gstack dispatch ${id} (acme-widget) has a plan and waits`);
        expect(planText).toContain(`gstack_answer with dispatch_id ${id}, answer approve, round 1`);
        expect(planText).toContain(`gstack-dispatch answer ${id} approve`);
        await waitFor(() => delivered(`${id}.awaiting-1`), 60_000, "the plan recorded as delivered");
        expect(await inHistory(reportMarker(awaitingKey({ dispatch_id: id, round: 1 })))).toBe(1);
        await expect(stat(world.layout.dispatch.completedJson(id))).rejects.toThrow();

        await approveFromChat(id, 1);
        await expectFinalReportOnce(id, "SHIPPED-APPROVED");
        // The plan was not posted again on its way.
        expect(turnsAbout("PLAN-ONE")).toHaveLength(1);
      } finally {
        await coding.stop();
      }
    });

    it("keeps the plan once across a gateway killed mid-turn while the dispatch waits, and the answer still works", async () => {
      const dispatch = await dispatchFromChat(
        gateway,
        world,
        {
          task: "Add survivor.txt and commit it",
          project: "acme-widget",
          project_dir: world.repo,
          mode: "plan",
        },
        SESSION,
      );
      const id = dispatch.id as string;
      // The plan's turn hangs: the gateway is killed with the plan posted and its turn unfinished.
      holds.add("PLAN-TWO");
      const coding = await startCodingDaemon(
        world,
        planThenExecuteScript("survivor.txt", "PLAN-TWO", "SHIPPED-SURVIVOR"),
      );
      try {
        const outboxFile = join(home.stateDir, "gstack", "outbox", `${id}.awaiting-1.json`);
        await waitFor(() => turnsAbout("PLAN-TWO")[0], 120_000, "the plan's turn");
        await waitFor(
          async () =>
            (JSON.parse(await readFile(outboxFile, "utf8").catch(() => "{}")) as { run_id?: string }).run_id,
          60_000,
          "the plan's turn recorded in the outbox",
        );
        expect(await delivered(`${id}.awaiting-1`)).toBeUndefined();
        await gateway.kill();

        gateway = await startOpenClawGateway({ home: home.home });
        await waitFor(() => delivered(`${id}.awaiting-1`), 120_000, "the plan settled after the restart");
        // In the session once: the restart asked the agent to answer it, it did not post it again.
        expect(await inHistory(reportMarker(awaitingKey({ dispatch_id: id, round: 1 })))).toBe(1);
        expect(await inHistory("PLAN-TWO")).toBe(1);
        // The dispatch still waits, and the answer given in the session after the restart works.
        expect(
          JSON.parse(await readFile(join(world.layout.dispatch.sessionDir(id), "state.json"), "utf8")),
        ).toMatchObject({
          status: "awaiting",
        });
        await approveFromChat(id, 1);
        await expectFinalReportOnce(id, "SHIPPED-SURVIVOR");
        expect(await inHistory("PLAN-TWO")).toBe(1);
      } finally {
        await coding.stop();
      }
    });

    it("ends an unanswered plan at its expiry with a clear report in the session", async () => {
      const dispatch = await dispatchFromChat(
        gateway,
        world,
        {
          task: "Add expired.txt and commit it",
          project: "acme-widget",
          project_dir: world.repo,
          mode: "plan",
        },
        SESSION,
      );
      const id = dispatch.id as string;
      // An hour to answer; nobody does. Once the plan is in the session, the daemon is started
      // again with its clock past that hour: it ends the wait at its expiry at once, as a daemon
      // does whose wait ran out while it was stopped, with no real hour (nor any fixed time) to wait.
      const plan = planThenExecuteScript("expired.txt", "PLAN-THREE", "NEVER-SHIPPED");
      let coding = await startCodingDaemon(world, plan, { awaiting_expiry_hours: 1 });
      try {
        const planText = newestUserText(
          await waitFor(() => turnsAbout("PLAN-THREE")[0], 120_000, "the plan"),
        );
        expect(planText).toMatch(/Unanswered, it ends cancelled at \S+\./);
        await waitFor(() => delivered(`${id}.awaiting-1`), 120_000, "the plan recorded as delivered");
        expect(turnsAbout(`gstack dispatch ${id} (acme-widget) was cancelled.`)).toHaveLength(0);
        await coding.stop();
        const later = 2 * 3_600_000;
        coding = await startCodingDaemon(
          world,
          plan,
          { awaiting_expiry_hours: 1 },
          { now: () => new Date(Date.now() + later) },
        );
        const report = await waitFor(
          () => turnsAbout(`gstack dispatch ${id} (acme-widget) was cancelled.`)[0],
          180_000,
          "the expiry report",
        );
        const text = newestUserText(report);
        expect(text).toContain("Error (cancelled): no answer to its plan (round 1) came between");
        expect(text).toContain("nothing was changed. Dispatch it again to start over.");
        await waitFor(() => delivered(id), 120_000, "the expiry report recorded as delivered");
        expect(text).toContain(reportMarker(`gstack:${id}:cancelled`));
        expect(await inHistory(reportMarker(`gstack:${id}:cancelled`))).toBe(1);
        expect(await inHistory("PLAN-THREE")).toBe(1);
        expect(turnsAbout("NEVER-SHIPPED")).toHaveLength(0);
        const completion = parseJson(
          "completion",
          await readFile(world.layout.dispatch.completedJson(id), "utf8"),
        ) as Completion;
        expect(completion).toMatchObject({ status: "cancelled", commits: 0 });
      } finally {
        await coding.stop();
      }
    });
  });
}

import { readFile, writeFile } from "node:fs/promises";
import { isoWeekOf, parseJsonLines } from "@gstack/contracts";
import {
  budgetOf,
  describeSpend,
  formatStatus,
  formatUsd,
  listSessionsOf,
  remainingBudget,
  submitDispatch,
  totalSpent,
} from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Daemon } from "../daemon";
import {
  auditOf,
  completionOf,
  dispatchFor,
  makeWorld,
  type TestWorld,
  testDaemon,
  waitFor,
} from "../test-support";

/**
 * An agent that reports what it spends, as a JSON-lines CLI does: `spend-then-429 <usd>` reports
 * `usd` and fails rate-limited on attempt 1 (in its final result), then on attempt 2 reports
 * `usd` again while working and keeps working; `spend <usd>` reports `usd` and finishes.
 */
const SPENDING_AGENT = `
const prompt = process.argv[2] ?? "";
const task = (prompt.split("## Task\\n")[1] ?? "").split("\\n")[0];
const [verb, amount] = task.split(" ");
const attempt = /This is attempt (\\d+)/.exec(prompt)?.[1] ?? "1";
const say = (event) => console.log(JSON.stringify(event));
const report = "## What shipped\\n- nothing\\n## Decisions made\\n- none\\n## Learnings logged\\n- none\\n## Needs human judgment\\n- Nothing";
if (verb === "spend-then-429" && attempt === "1") {
  say({ type: "result", is_error: true, result: "API Error: Request rejected (429)", total_cost_usd: Number(amount) });
  process.exit(1);
} else if (verb === "spend-then-429") {
  say({ type: "message", role: "assistant", content: "working", total_cost_usd: Number(amount) });
  setInterval(() => {}, 1000);
} else {
  say({ type: "message", role: "assistant", content: report, total_cost_usd: Number(amount) });
}
`;

describe("spend arithmetic", () => {
  it("takes the dispatch's cap before the daemon's default", () => {
    expect(budgetOf({ budget_usd: 2 }, { default_budget_usd: 5 })).toBe(2);
    expect(budgetOf({}, { default_budget_usd: 5 })).toBe(5);
    expect(budgetOf({}, {})).toBeUndefined();
  });

  it("leaves what earlier attempts did not spend, never less than nothing", () => {
    expect(remainingBudget(1, 0.6)).toBe(0.4);
    expect(remainingBudget(1, 1.6)).toBe(0);
    expect(remainingBudget(1, undefined)).toBe(1);
    expect(remainingBudget(undefined, 3)).toBeUndefined();
    expect(totalSpent(0.6, 0.5)).toBeCloseTo(1.1);
    expect(totalSpent(undefined, undefined)).toBeUndefined();
  });

  it("says what was spent, a small amount included", () => {
    expect(formatUsd(0.004)).toBe("$0.004");
    expect(formatUsd(4.017)).toBe("$4.02");
    expect(describeSpend(undefined, undefined)).toBe("Cost: not reported by the agent.");
    expect(describeSpend(0.42, 1)).toBe("Cost: $0.42 of a $1.00 budget.");
  });
});

describe("status", () => {
  it("shows what a running dispatch has spent over its attempts, and its cap", async () => {
    const now = new Date("2026-11-25T12:00:00Z");
    const listed = await listSessionsOf(
      [
        {
          id: "dispatch-a",
          project: "acme",
          project_dir: "/nonexistent",
          agent: "claude",
          status: "retrying",
          claimed_file: "x",
          first_seen: now.toISOString(),
          queued_at: now.toISOString(),
          attempt: 2,
          retries: 1,
          include_learnings: true,
          updated_at: now.toISOString(),
          budget_usd: 2,
          spent_usd: 0.5,
          progress: { turns: 3, toolUses: 1, costUsd: 0.25 },
        },
      ],
      [],
      2,
      now,
    );
    expect(listed.sessions[0]).toMatchObject({ cost_usd: 0.75, budget_usd: 2 });
    expect(formatStatus({ alive: false, sessions: listed })).toContain("attempt 2  spent $0.75 of $2.00");
  });
});

describe("a dispatch with a spend cap", () => {
  let world: TestWorld;
  let daemon: Daemon | undefined;

  beforeEach(async () => {
    world = await makeWorld();
    await writeFile(world.agentScript, SPENDING_AGENT);
  });

  afterEach(async () => {
    await daemon?.stop(0);
    daemon = undefined;
    await world.cleanup();
  });

  async function run(
    id: string,
    task: string,
    extra: Record<string, unknown>,
    settings: Record<string, unknown> = {},
  ) {
    daemon = testDaemon(world, { retryDelayMs: { rateLimit: 20, other: 20 } }, settings);
    await daemon.start();
    await submitDispatch(world.layout, dispatchFor(world, id, task, extra));
    const layout = world.layout;
    return waitFor(() => completionOf(layout, id), 30_000);
  }

  it("gives a retry only what the first attempt left, and stops it there", async () => {
    const completion = await run("dispatch-spend-retry", "spend-then-429 0.6", { budget_usd: 1 });
    expect(completion).toMatchObject({
      status: "failed",
      error_kind: "budget_exhausted",
      retries: 1,
      cost_usd: 1.2,
      budget_usd: 1,
    });
    expect(completion.error).toBe("Spent $0.60 of its $0.40 budget; the agent was stopped.");
    const report = await readFile(world.layout.dispatch.completedReport("dispatch-spend-retry"), "utf8");
    expect(report).toContain("Cost: $1.20 of a $1.00 budget.");
    const failed = (await auditOf(world.layout)).find((event) => event.event === "failed");
    expect(failed?.detail).toMatchObject({ cost_usd: 1.2, budget_usd: 1 });
  });

  it("does not start again when earlier attempts spent the whole cap (the daemon's default)", async () => {
    const completion = await run(
      "dispatch-spend-gone",
      "spend-then-429 0.6",
      {},
      { default_budget_usd: 0.5 },
    );
    expect(completion).toMatchObject({
      status: "failed",
      error_kind: "budget_exhausted",
      cost_usd: 0.6,
      budget_usd: 0.5,
    });
    expect(completion.error).toBe("Spent $0.60 of its $0.50 budget before this attempt; not started again.");
  });

  it("records the cost in the activity entry of a dispatch that finished within its cap", async () => {
    const completion = await run("dispatch-spend-ok", "spend 0.25", { budget_usd: 1 });
    expect(completion).toMatchObject({ status: "completed", cost_usd: 0.25, budget_usd: 1 });
    const week = world.layout.activity.week(isoWeekOf(new Date(String(completion.finished_at))));
    const entries = parseJsonLines("activity-entry", await readFile(week, "utf8"), { source: week });
    expect(entries.problems).toEqual([]);
    expect(entries.entries.map((entry) => entry.value)).toEqual([
      expect.objectContaining({ dispatch_id: "dispatch-spend-ok", cost_usd: 0.25 }),
    ]);
  });
});

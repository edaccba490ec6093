import { describe, expect, it } from "vitest";
import { loadBudget, loadFactor, waitUntil } from "../../../vitest.load-budget";

describe("waits whose budget grows with the machine's load", () => {
  it("scales by the busier of the 1- and 5-minute load per core, never below 1", () => {
    expect(loadFactor([8, 6, 4], 2)).toBe(4);
    expect(loadFactor([1, 9, 12], 2)).toBe(4.5);
    expect(loadFactor([0.5, 0.2, 0], 2)).toBe(1);
    expect(loadFactor([], 2)).toBe(1);
    expect(loadBudget(1000)).toBeGreaterThanOrEqual(1000);
  });

  it("returns the first value the check gives", async () => {
    let calls = 0;
    const value = await waitUntil(() => (++calls === 3 ? "ready" : undefined), {
      idleMs: 60_000,
      what: "the third call",
    });
    expect({ value, calls }).toEqual({ value: "ready", calls: 3 });
  });

  it("names what it waited for and the last thing seen when the budget runs out", async () => {
    await expect(
      waitUntil(() => undefined, { idleMs: 0, what: "a state never reached", lastSeen: () => "queued" }),
    ).rejects.toThrow(
      /^a state never reached: not reached after \d+ ms \(load factor \d+\.\d\); last seen: queued$/,
    );
  });
});

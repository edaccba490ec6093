import type { Dispatch, DispatchSettings } from "@gstack/contracts";

/** The spend cap a dispatch runs under: its own `budget_usd`, else the daemon's default, else none. */
export function budgetOf(
  dispatch: Pick<Dispatch, "budget_usd">,
  settings: Pick<DispatchSettings, "default_budget_usd">,
): number | undefined {
  return dispatch.budget_usd ?? settings.default_budget_usd;
}

/**
 * What is left of a cap after earlier attempts spent `spentUsd`: undefined without a cap, 0 when
 * nothing is left (the dispatch must not start again).
 */
export function remainingBudget(
  budgetUsd: number | undefined,
  spentUsd: number | undefined,
): number | undefined {
  if (budgetUsd === undefined) return undefined;
  return Math.max(0, roundCents(budgetUsd - (spentUsd ?? 0)));
}

/** Cost over every attempt: what earlier attempts spent plus the current one's reported cost. */
export function totalSpent(
  earlierUsd: number | undefined,
  currentUsd: number | undefined,
): number | undefined {
  if (earlierUsd === undefined && currentUsd === undefined) return undefined;
  return (earlierUsd ?? 0) + (currentUsd ?? 0);
}

/**
 * Moves what an attempt that is not the last reported spending (its `progress.costUsd`) into the
 * dispatch's running total `spent_usd`, so the next attempt's progress does not lose it and the
 * completion does not count it twice.
 */
export function carryAttemptSpend(state: { spent_usd?: number; progress?: { costUsd?: number } }): void {
  const spent = totalSpent(state.spent_usd, state.progress?.costUsd);
  if (spent !== undefined) state.spent_usd = spent;
  if (state.progress) delete state.progress.costUsd;
}

function roundCents(amount: number): number {
  return Math.round(amount * 1e6) / 1e6;
}

/** `$0.42`; amounts under a cent keep three decimals so a small run does not read as free. */
export function formatUsd(amount: number): string {
  return amount > 0 && amount < 0.01 ? `$${amount.toFixed(3)}` : `$${amount.toFixed(2)}`;
}

/** One line for reports and status: what was spent, and the cap when there is one. */
export function describeSpend(costUsd: number | undefined, budgetUsd: number | undefined): string {
  const spent = costUsd === undefined ? "not reported by the agent" : formatUsd(costUsd);
  return budgetUsd === undefined ? `Cost: ${spent}.` : `Cost: ${spent} of a ${formatUsd(budgetUsd)} budget.`;
}

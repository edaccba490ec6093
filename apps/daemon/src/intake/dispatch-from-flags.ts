import { randomBytes } from "node:crypto";
import { basename, resolve } from "node:path";
import { MAX_BUDGET_USD } from "@gstack/contracts";
import { DaemonError } from "../errors";

/** What `gstack-dispatch submit` takes on its command line instead of a file. */
export interface DispatchFlags {
  task: string;
  /** The folder the agent works in (default: the current folder). */
  projectDir?: string;
  /** The gstack project slug (default: made from the folder's name). */
  project?: string;
  agent?: string;
  branch?: string;
  taskType?: string;
  ttlSeconds?: number;
  /** Spend cap in US dollars (`budget_usd`). */
  budgetUsd?: number;
  constraints?: string[];
}

/** A project slug made from a folder name: letters, digits, `.`, `_` and `-`, others become `-`. */
export function slugOf(folder: string): string {
  const slug = basename(folder)
    .replace(/[^A-Za-z0-9._-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 200);
  return slug === "" || slug === "." || slug === ".." ? "project" : slug;
}

/** A fresh dispatch id: the time it was made, then random letters, so ids sort by age. */
export function newDispatchId(now: Date = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\..*$/, "").replace("T", "-").toLowerCase();
  return `dispatch-${stamp}-${randomBytes(4).toString("hex")}`;
}

/**
 * The dispatch document the flags describe, before validation and signing (which `submit`
 * does the same way as for a file). `dispatched_by` says it came from a terminal.
 */
export function dispatchFromFlags(
  flags: DispatchFlags,
  options: { cwd: string; now?: Date },
): Record<string, unknown> {
  if (!flags.task.trim()) throw new DaemonError("--task is empty: say what the agent should do");
  const projectDir = resolve(options.cwd, flags.projectDir ?? ".");
  const now = options.now ?? new Date();
  return {
    id: newDispatchId(now),
    dispatched_by: "gstack-dispatch",
    task: flags.task,
    project: flags.project ?? slugOf(projectDir),
    project_dir: projectDir,
    ...(flags.agent ? { target_agent: flags.agent } : {}),
    ...(flags.branch ? { branch: flags.branch } : {}),
    ...(flags.taskType ? { task_type: flags.taskType } : {}),
    ...(flags.constraints?.length ? { constraints: flags.constraints } : {}),
    ...(flags.ttlSeconds !== undefined ? { ttl_seconds: flags.ttlSeconds } : {}),
    ...(flags.budgetUsd !== undefined ? { budget_usd: flags.budgetUsd } : {}),
    created_at: now.toISOString(),
  };
}

/**
 * The spend cap `--budget` gives, in US dollars: a plain number (`5`, `2.50`) more than zero and
 * at most the contract's largest; anything else is refused in one line naming the flag and rule.
 */
export function budgetFromFlag(text: string): number {
  const trimmed = text.trim();
  const value = /^(?:\d+(?:\.\d*)?|\.\d+)$/.test(trimmed) ? Number(trimmed) : Number.NaN;
  if (!(value > 0 && value <= MAX_BUDGET_USD))
    throw new DaemonError(
      `--budget must be a number of US dollars more than 0 and at most ${MAX_BUDGET_USD}, got ${JSON.stringify(text)}`,
    );
  return value;
}

import { randomBytes } from "node:crypto";
import { basename, resolve } from "node:path";
import { type Dispatch, dispatchSchema, MAX_BUDGET_USD } from "@gstack/contracts";
import { DaemonError } from "@gstack/daemon-client";

/** What `gstack-dispatch submit` takes on its command line, instead of a file or over its fields. */
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
  /** `plan` (plan read-only, then wait for a person) or `execute`; see {@link modeFromFlag}. */
  mode?: DispatchMode;
  constraints?: string[];
}

/** A dispatch's `mode`, as the contract names its values. */
export type DispatchMode = NonNullable<Dispatch["mode"]>;

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
 * The dispatch fields the flags given name, and only those: what `submit` lays over a dispatch
 * file's own fields. `projectDir` is resolved against `cwd`.
 */
export function fieldsFromFlags(
  flags: Partial<DispatchFlags>,
  options: { cwd: string },
): Record<string, unknown> {
  if (flags.task !== undefined && !flags.task.trim())
    throw new DaemonError("--task is empty: say what the agent should do");
  return {
    ...(flags.task !== undefined ? { task: flags.task } : {}),
    ...(flags.projectDir !== undefined ? { project_dir: resolve(options.cwd, flags.projectDir) } : {}),
    ...(flags.project !== undefined ? { project: flags.project } : {}),
    ...(flags.agent !== undefined ? { target_agent: flags.agent } : {}),
    ...(flags.branch !== undefined ? { branch: flags.branch } : {}),
    ...(flags.taskType !== undefined ? { task_type: flags.taskType } : {}),
    ...(flags.constraints?.length ? { constraints: flags.constraints } : {}),
    ...(flags.ttlSeconds !== undefined ? { ttl_seconds: flags.ttlSeconds } : {}),
    ...(flags.budgetUsd !== undefined ? { budget_usd: flags.budgetUsd } : {}),
    ...(flags.mode !== undefined ? { mode: flags.mode } : {}),
  };
}

/**
 * The dispatch document the flags describe, before validation and signing (which `submit`
 * does the same way as for a file). `dispatched_by` says it came from a terminal.
 */
export function dispatchFromFlags(
  flags: DispatchFlags,
  options: { cwd: string; now?: Date },
): Record<string, unknown> {
  const given = fieldsFromFlags(flags, options);
  const projectDir = resolve(options.cwd, flags.projectDir ?? ".");
  const now = options.now ?? new Date();
  return {
    id: newDispatchId(now),
    dispatched_by: "gstack-dispatch",
    project: slugOf(projectDir),
    project_dir: projectDir,
    ...given,
    created_at: now.toISOString(),
  };
}

/**
 * The dispatch `--mode` asks for, one of the values the contract allows (read from the schema,
 * so the flag and the contract cannot disagree); anything else is refused in one line.
 */
export function modeFromFlag(text: string): DispatchMode {
  const modes = dispatchModes();
  const mode = modes.find((candidate) => candidate === text.trim());
  if (mode === undefined)
    throw new DaemonError(`--mode must be ${modes.join(" or ")}, got ${JSON.stringify(text)}`);
  return mode;
}

/** The values the dispatch contract allows for `mode`. */
export function dispatchModes(): readonly DispatchMode[] {
  return dispatchSchema.shape.mode.unwrap().options;
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

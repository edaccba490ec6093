import type { DocumentKind } from "./documents";
import { activitySources, timelineDurationPattern, timelineEvents } from "./schemas/activity";
import {
  codePointLength,
  dispatchIdPattern,
  GIT_REF_START_PATTERN,
  HTTP_URL_PATTERN,
  NO_NUL_PATTERN,
  projectSlugPattern,
  SAFE_LINE_PATTERN,
  SAFE_TEXT_PATTERN,
  SKILL_NAME_MAX,
  SKILL_NAME_PATTERN,
  safeNamePattern,
  targetAgentPattern,
  VISIBLE_TEXT_PATTERN,
} from "./schemas/common";
import { DISPATCH_MODES, sourceSignaturePattern, TASK_MAX } from "./schemas/dispatch";
import { handoffStatuses, RESUME_PROMPT_MAX, runtimeNamePattern } from "./schemas/handoff";
import { learningKeyPattern, learningSources, learningTypes } from "./schemas/learning";
import { isTimestamp } from "./timestamp";

export { isTimestamp };

/**
 * Fast checks: for the kinds read most often (dispatches, activity and learnings lines), a
 * check written out by hand that says "valid" for an ordinary valid document and builds the
 * same value the zod schema would (same fields, same order, defaults filled in). It never
 * says "invalid": anything it does not accept, valid or not, is left to the zod schema, which
 * stays the only source of results for unusual documents and of every error message.
 * `fast-checks.test.ts` holds the two to the same answers.
 */

/** What a check returns for a value it does not accept. */
export const DECLINED: unique symbol = Symbol("declined");

/** A value's parsed form, or {@link DECLINED}. */
export type FastCheck = (value: unknown) => unknown;

const isString = (value: unknown): value is string => typeof value === "string";

const text: FastCheck = (value) => (isString(value) ? value : DECLINED);

const nonEmptyText: FastCheck = (value) => (isString(value) && value.length > 0 ? value : DECLINED);

function matching(pattern: RegExp): FastCheck {
  return (value) => (isString(value) && pattern.test(value) ? value : DECLINED);
}

/** `boundedString(maximum, minimum)`: UTF-16 length at least `minimum`, code points at most `maximum`. */
function bounded(maximum: number, minimum = 0): FastCheck {
  return (value) =>
    isString(value) &&
    value.length >= minimum &&
    (value.length <= maximum || codePointLength(value) <= maximum)
      ? value
      : DECLINED;
}

function integer(minimum: number, maximum = Number.MAX_SAFE_INTEGER): FastCheck {
  return (value) =>
    typeof value === "number" && Number.isSafeInteger(value) && value >= minimum && value <= maximum
      ? value
      : DECLINED;
}

const boolean: FastCheck = (value) => (typeof value === "boolean" ? value : DECLINED);

function oneOf(values: readonly string[]): FastCheck {
  const allowed = new Set(values);
  return (value) => (isString(value) && allowed.has(value) ? value : DECLINED);
}

const projectSlug: FastCheck = (value) =>
  isString(value) && value.length <= 200 && projectSlugPattern.test(value) ? value : DECLINED;

const timestamp: FastCheck = (value) => (isString(value) && isTimestamp(value) ? value : DECLINED);

/** A list, copied (as zod copies it) with each item checked. */
function list(item: FastCheck, minimumLength = 0): FastCheck {
  return (value) => {
    if (!Array.isArray(value) || value.length < minimumLength) return DECLINED;
    const output = new Array(value.length);
    for (let index = 0; index < value.length; index++) {
      const checked = item(value[index]);
      if (checked === DECLINED) return DECLINED;
      output[index] = checked;
    }
    return output;
  };
}

const textList = list(text);

/** Every check must pass; the value is the first one's. */
function all(first: FastCheck, ...others: FastCheck[]): FastCheck {
  return (value) => {
    const checked = first(value);
    if (checked === DECLINED) return DECLINED;
    for (const other of others) if (other(value) === DECLINED) return DECLINED;
    return checked;
  };
}

/** `safeTextSchema`: any string without control characters (tab and line breaks allowed) or bidi controls. */
const safeText = matching(SAFE_TEXT_PATTERN);
const safeTextList = list(safeText);
/** `safeLineSchema`: a non-empty line without control characters, bidi controls or direction marks. */
const safeLine = all(nonEmptyText, matching(SAFE_LINE_PATTERN));
/** `displayNameSchema`: a safe line with at least one visible character. */
const displayName = all(nonEmptyText, matching(VISIBLE_TEXT_PATTERN), matching(SAFE_LINE_PATTERN));
/** `pathSchema`: a non-empty path without NUL. */
const path = all(nonEmptyText, matching(NO_NUL_PATTERN));
/** `pathEntrySchema`, in a list: a path or glob without NUL, empty allowed. */
const pathList = list(matching(NO_NUL_PATTERN));
/** `gitRefSchema`: a non-empty safe line that does not start with `-`. */
const gitRef = all(nonEmptyText, matching(GIT_REF_START_PATTERN), matching(SAFE_LINE_PATTERN));

interface Field {
  key: string;
  check: FastCheck;
  /** Absent is allowed: the key stays absent, or gets `fallback` when there is one. */
  optional: boolean;
  fallback?: string;
}

const required = (check: FastCheck) => ({ check, optional: false });
const optional = (check: FastCheck) => ({ check, optional: true });

/**
 * A `z.looseObject`: the fields of `shape` in its order, then every other key of the input in
 * the input's order, kept as they are. Only plain objects are taken, without `__proto__` keys
 * and without keys whose value is `undefined` (which JSON cannot carry). With `strict`, a
 * `z.strictObject`: any other key is left to zod (which refuses it).
 */
function looseObject(
  shape: Record<string, { check: FastCheck; optional: boolean; fallback?: string }>,
  strict = false,
): FastCheck {
  const fields: Field[] = Object.entries(shape).map(([key, field]) => ({ key, ...field }));
  const known = new Set(Object.keys(shape));
  return (value) => {
    if (typeof value !== "object" || value === null || Object.getPrototypeOf(value) !== Object.prototype)
      return DECLINED;
    const input = value as Record<string, unknown>;
    const output: Record<string, unknown> = {};
    for (const field of fields) {
      const fieldValue = input[field.key];
      if (fieldValue === undefined) {
        if (!field.optional || Object.hasOwn(input, field.key)) return DECLINED;
        if (field.fallback !== undefined) output[field.key] = field.fallback;
        continue;
      }
      const checked = field.check(fieldValue);
      if (checked === DECLINED) return DECLINED;
      output[field.key] = checked;
    }
    for (const key in input) {
      if (known.has(key)) continue;
      if (strict) return DECLINED;
      const other = input[key];
      if (other === undefined || key === "__proto__") return DECLINED;
      output[key] = other;
    }
    return output;
  };
}

const replyTo = looseObject({
  runtime: required(oneOf(["openclaw"])),
  session_key: required(bounded(512, 1)),
  agent_id: optional(bounded(128, 1)),
  session_id: optional(bounded(512, 1)),
});

const dispatchId = matching(dispatchIdPattern);
const task = all(bounded(TASK_MAX, 1), safeText);
const callbackUrl = matching(HTTP_URL_PATTERN);
const targetAgent = matching(targetAgentPattern);
const sourceSignature = matching(sourceSignaturePattern);
const ttlSeconds = integer(60, 86_400);
const dispatchMode = oneOf(DISPATCH_MODES);
/** `budgetUsdSchema`: a finite number above 0, at most 10 000. */
const budgetUsd: FastCheck = (value) =>
  typeof value === "number" && Number.isFinite(value) && value > 0 && value <= 10_000 ? value : DECLINED;
/** `z.number().min(0)`: a finite number, not negative. */
const costUsd: FastCheck = (value) =>
  typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : DECLINED;
const dispatchKeys = new Set([
  "id",
  "dispatched_by",
  "task",
  "project",
  "project_dir",
  "learnings",
  "constraints",
  "callback_url",
  "clawvisor_task_id",
  "target_agent",
  "source_signature",
  "ttl_seconds",
  "created_at",
  "branch",
  "base",
  "task_type",
  "files",
  "handoff_id",
  "reply_to",
  "budget_usd",
  "mode",
]);

/**
 * `dispatchSchema`, written out field by field rather than through {@link looseObject}:
 * dispatches are the kind read on every hand-over, and named fields read and write faster
 * than fields looked up by a key held in a variable.
 */
const dispatch: FastCheck = (value) => {
  if (typeof value !== "object" || value === null || Object.getPrototypeOf(value) !== Object.prototype)
    return DECLINED;
  const input = value as Record<string, unknown>;
  const id = dispatchId(input.id);
  const dispatchedBy = displayName(input.dispatched_by);
  const taskText = task(input.task);
  const project = projectSlug(input.project);
  const projectDir = path(input.project_dir);
  if (
    id === DECLINED ||
    dispatchedBy === DECLINED ||
    taskText === DECLINED ||
    project === DECLINED ||
    projectDir === DECLINED
  )
    return DECLINED;
  const output: Record<string, unknown> = {
    id,
    dispatched_by: dispatchedBy,
    task: taskText,
    project,
    project_dir: projectDir,
  };
  // Each optional field: absent stays absent; present must pass (an own `undefined` is left to zod).
  const learningsValue = input.learnings;
  if (learningsValue !== undefined) {
    const checked = safeTextList(learningsValue);
    if (checked === DECLINED) return DECLINED;
    output.learnings = checked;
  } else if (Object.hasOwn(input, "learnings")) return DECLINED;
  const constraintsValue = input.constraints;
  if (constraintsValue !== undefined) {
    const checked = safeTextList(constraintsValue);
    if (checked === DECLINED) return DECLINED;
    output.constraints = checked;
  } else if (Object.hasOwn(input, "constraints")) return DECLINED;
  const callbackUrlValue = input.callback_url;
  if (callbackUrlValue !== undefined) {
    const checked = callbackUrl(callbackUrlValue);
    if (checked === DECLINED) return DECLINED;
    output.callback_url = checked;
  } else if (Object.hasOwn(input, "callback_url")) return DECLINED;
  const clawvisorTaskIdValue = input.clawvisor_task_id;
  if (clawvisorTaskIdValue !== undefined) {
    const checked = safeLine(clawvisorTaskIdValue);
    if (checked === DECLINED) return DECLINED;
    output.clawvisor_task_id = checked;
  } else if (Object.hasOwn(input, "clawvisor_task_id")) return DECLINED;
  const targetAgentValue = input.target_agent;
  if (targetAgentValue !== undefined) {
    const checked = targetAgent(targetAgentValue);
    if (checked === DECLINED) return DECLINED;
    output.target_agent = checked;
  } else if (Object.hasOwn(input, "target_agent")) return DECLINED;
  else output.target_agent = "claude";
  const sourceSignatureValue = input.source_signature;
  if (sourceSignatureValue !== undefined) {
    const checked = sourceSignature(sourceSignatureValue);
    if (checked === DECLINED) return DECLINED;
    output.source_signature = checked;
  } else if (Object.hasOwn(input, "source_signature")) return DECLINED;
  const ttlSecondsValue = input.ttl_seconds;
  if (ttlSecondsValue !== undefined) {
    const checked = ttlSeconds(ttlSecondsValue);
    if (checked === DECLINED) return DECLINED;
    output.ttl_seconds = checked;
  } else if (Object.hasOwn(input, "ttl_seconds")) return DECLINED;
  const createdAtValue = input.created_at;
  if (createdAtValue !== undefined) {
    const checked = timestamp(createdAtValue);
    if (checked === DECLINED) return DECLINED;
    output.created_at = checked;
  } else if (Object.hasOwn(input, "created_at")) return DECLINED;
  const branchValue = input.branch;
  if (branchValue !== undefined) {
    const checked = gitRef(branchValue);
    if (checked === DECLINED) return DECLINED;
    output.branch = checked;
  } else if (Object.hasOwn(input, "branch")) return DECLINED;
  const baseValue = input.base;
  if (baseValue !== undefined) {
    const checked = gitRef(baseValue);
    if (checked === DECLINED) return DECLINED;
    output.base = checked;
  } else if (Object.hasOwn(input, "base")) return DECLINED;
  const taskTypeValue = input.task_type;
  if (taskTypeValue !== undefined) {
    const checked = displayName(taskTypeValue);
    if (checked === DECLINED) return DECLINED;
    output.task_type = checked;
  } else if (Object.hasOwn(input, "task_type")) return DECLINED;
  const filesValue = input.files;
  if (filesValue !== undefined) {
    const checked = pathList(filesValue);
    if (checked === DECLINED) return DECLINED;
    output.files = checked;
  } else if (Object.hasOwn(input, "files")) return DECLINED;
  const handoffIdValue = input.handoff_id;
  if (handoffIdValue !== undefined) {
    const checked = safeLine(handoffIdValue);
    if (checked === DECLINED) return DECLINED;
    output.handoff_id = checked;
  } else if (Object.hasOwn(input, "handoff_id")) return DECLINED;
  const replyToValue = input.reply_to;
  if (replyToValue !== undefined) {
    const checked = replyTo(replyToValue);
    if (checked === DECLINED) return DECLINED;
    output.reply_to = checked;
  } else if (Object.hasOwn(input, "reply_to")) return DECLINED;
  const budgetValue = input.budget_usd;
  if (budgetValue !== undefined) {
    const checked = budgetUsd(budgetValue);
    if (checked === DECLINED) return DECLINED;
    output.budget_usd = checked;
  } else if (Object.hasOwn(input, "budget_usd")) return DECLINED;
  const modeValue = input.mode;
  if (modeValue !== undefined) {
    const checked = dispatchMode(modeValue);
    if (checked === DECLINED) return DECLINED;
    output.mode = checked;
  } else if (Object.hasOwn(input, "mode")) return DECLINED;
  for (const key in input) {
    if (dispatchKeys.has(key)) continue;
    const other = input[key];
    if (other === undefined || key === "__proto__") return DECLINED;
    output[key] = other;
  }
  return output;
};

const activityEntry = looseObject({
  ts: required(timestamp),
  project: required(projectSlug),
  skill: required(all(bounded(SKILL_NAME_MAX, 1), matching(SKILL_NAME_PATTERN))),
  artifacts: optional(textList),
  duration: required(integer(0)),
  dispatch: optional(nonEmptyText),
  dispatch_id: optional(nonEmptyText),
  branch: optional(nonEmptyText),
  outcome: optional(nonEmptyText),
  session: optional(nonEmptyText),
  source: optional(oneOf(activitySources)),
  cost_usd: optional(costUsd),
});

const learning = looseObject({
  skill: optional(text),
  type: required(oneOf(learningTypes)),
  key: required(matching(learningKeyPattern)),
  insight: required(text),
  confidence: optional(integer(1, 10)),
  source: optional(oneOf(learningSources)),
  files: optional(textList),
  ts: optional(timestamp),
  trusted: optional(boolean),
  origin: optional(text),
});

const handoff = looseObject({
  id: optional(matching(safeNamePattern)),
  from: required(matching(runtimeNamePattern)),
  to: required(matching(runtimeNamePattern)),
  project: required(projectSlug),
  branch: optional(gitRef),
  timestamp: required(timestamp),
  status: { check: oneOf(handoffStatuses), optional: true, fallback: "pending" },
  picked_up_at: optional(timestamp),
  picked_up_by: optional(safeLine),
  project_dir: optional(path),
  source: optional(safeLine),
  context: optional(safeText),
  state: optional(safeText),
  what_i_need: optional(safeText),
  resume_prompt: optional(all(bounded(RESUME_PROMPT_MAX), safeText)),
});

const nonEmptyTexts = list(nonEmptyText, 1);
/** `z.union([nonEmpty, nonEmpty[] with at least one])`: a string stays, a list is copied. */
const oneOrMany: FastCheck = (value) => (isString(value) ? nonEmptyText(value) : nonEmptyTexts(value));

const routeMatch = looseObject(
  {
    project: optional(oneOrMany),
    task_type: optional(oneOrMany),
    files: optional(nonEmptyTexts),
    branch: optional(oneOrMany),
    agent: optional(oneOrMany),
  },
  true,
);

const routeFields = looseObject({
  name: optional(nonEmptyText),
  description: optional(text),
  match: required(routeMatch),
  load: optional(list(nonEmptyText)),
  skills: optional(list(nonEmptyText)),
});

/** A route names at least one thing to load or use; zod words the refusal. */
const route: FastCheck = (value) => {
  const checked = routeFields(value);
  if (checked === DECLINED) return DECLINED;
  const { load, skills } = checked as { load?: string[]; skills?: string[] };
  return (load?.length ?? 0) + (skills?.length ?? 0) > 0 ? checked : DECLINED;
};

const routing = looseObject({
  version: optional((value) => (value === 1 ? value : DECLINED)),
  routes: required(list(route)),
});

const timelineEvent = looseObject({
  skill: required(nonEmptyText),
  event: required(oneOf(timelineEvents)),
  branch: optional(text),
  outcome: optional(text),
  duration_s: optional(matching(timelineDurationPattern)),
  session: optional(text),
  ts: required(timestamp),
});

/** The kinds with a fast check. */
export const fastChecks: Partial<Record<DocumentKind, FastCheck>> = {
  dispatch,
  "activity-entry": activityEntry,
  learning,
  handoff,
  routing,
  "timeline-event": timelineEvent,
};

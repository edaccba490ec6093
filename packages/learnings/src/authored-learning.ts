import {
  isSafeName,
  type LearningSource,
  type LearningType,
  learningSourceSchema,
  learningTypeSchema,
} from "@gstack/contracts";
import { parseLearningTitle } from "./memory-section";

/**
 * A learning the OpenClaw agent (or a person) wrote into a memory file by hand:
 *
 * ```markdown
 * ## Learning: pitfall/use-vitest-not-jest
 * The test runner is vitest; jest configs in the repo are dead.
 *
 * - project: acme-widget
 * - confidence: 8
 * - files: vitest.config.ts, package.json
 * - source: observed
 * - skill: openclaw
 * ```
 *
 * Only the heading and the insight are required. The heading may use `#` to `######`, a
 * space, `:` or `/` between type and key, and may end in `<!-- importance: N -->`, which
 * stands in for `confidence` when that line is missing.
 */
export interface AuthoredLearning {
  type: LearningType;
  key: string;
  insight: string;
  confidence: number | undefined;
  files: string[] | undefined;
  source: LearningSource | undefined;
  skill: string | undefined;
  /** The gstack project the learning belongs to, when the section names one. */
  project: string | undefined;
}

/** The outcome of reading a hand-written section: a learning, or why it cannot be one. */
export type AuthoredResult = { ok: true; learning: AuthoredLearning } | { ok: false; reason: string };

const LOOKS_LIKE_LEARNING = /^(?:gstack[ \t]+)?learning(?![a-z])[ \t]*[:\-–—·|]/i;
const FIELD_LINE = /^\s*[-*+]\s+\**(project|confidence|files?|source|skill)\**\s*:\s*(.*?)\s*$/i;

/**
 * Reads a hand-written learning section leniently (quoted or plain insight, fields in any
 * order and case, `file:` or `files:`) and validates what it found. `title` is the heading
 * text without `#`s; `lines` are the lines under it. Returns undefined when the heading is
 * not a learning heading at all.
 */
export function parseAuthoredLearning(title: string, lines: readonly string[]): AuthoredResult | undefined {
  const heading = parseLearningTitle(title);
  if (!heading) {
    if (!LOOKS_LIKE_LEARNING.test(title.trim())) return undefined;
    return {
      ok: false,
      reason: "heading must read \"Learning: <type>/<key>\" with a key of letters, digits, '_' and '-'",
    };
  }
  const typeValue = [heading.type, heading.type.replace(/s$/, "")]
    .map((candidate) => learningTypeSchema.safeParse(candidate))
    .find((parsed) => parsed.success)?.data;
  if (typeValue === undefined) {
    return {
      ok: false,
      reason: `unknown learning type "${heading.type}" (use one of ${learningTypeSchema.options.join(", ")})`,
    };
  }
  const fields = new Map<string, string>();
  let end = lines.length;
  while (end > 0) {
    const line = lines[end - 1]!;
    const field = FIELD_LINE.exec(line);
    if (field) {
      const name = field[1]!.toLowerCase().replace(/^file$/, "files");
      if (!fields.has(name)) fields.set(name, field[2]!);
    } else if (line.trim() !== "" && !/^\s*<!--.*-->\s*$/.test(line)) {
      break;
    }
    end--;
  }
  let body = lines.slice(0, end).map((line) => line.replace(/[ \t]+$/, ""));
  while (body.length > 0 && body[0] === "") body.shift();
  while (body.length > 0 && body[body.length - 1] === "") body.pop();
  if (body.length > 0 && body.every((line) => line === "" || line.startsWith(">"))) {
    body = body.map((line) => (line.startsWith("> ") ? line.slice(2) : line.slice(1)));
  }
  const insight = body.join("\n").trim();
  if (insight === "") return { ok: false, reason: "has no insight text under the heading" };

  let confidence: number | undefined = heading.importance;
  const confidenceText = fields.get("confidence");
  if (confidenceText !== undefined) {
    const match = /^(\d+)(?:\s*\/\s*10)?$/.exec(confidenceText);
    confidence = match ? Number(match[1]) : Number.NaN;
  }
  if (confidence !== undefined && !(Number.isInteger(confidence) && confidence >= 1 && confidence <= 10)) {
    return {
      ok: false,
      reason: `confidence must be a whole number from 1 to 10, got "${confidenceText ?? heading.importance}"`,
    };
  }
  let source: LearningSource | undefined;
  const sourceText = fields.get("source");
  if (sourceText !== undefined) {
    const parsed = learningSourceSchema.safeParse(sourceText.toLowerCase());
    if (!parsed.success) {
      return {
        ok: false,
        reason: `source must be one of ${learningSourceSchema.options.join(", ")}, got "${sourceText}"`,
      };
    }
    source = parsed.data;
  }
  const filesText = fields.get("files");
  const files =
    filesText === undefined
      ? undefined
      : filesText
          .split(",")
          .map((file) => file.trim().replace(/^`(.*)`$/, "$1"))
          .filter((file) => file !== "");
  const project = fields.get("project")?.replace(/^`(.*)`$/, "$1");
  if (project !== undefined && !isSafeName(project)) {
    return { ok: false, reason: `project "${project}" is not a gstack project slug` };
  }
  const skill = fields.get("skill");
  return {
    ok: true,
    learning: {
      type: typeValue,
      key: heading.key,
      insight,
      confidence,
      files,
      source,
      skill: skill === "" ? undefined : skill,
      project,
    },
  };
}

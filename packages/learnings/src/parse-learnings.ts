import { checkValue } from "@gstack/contracts";
import { isPlainValidLearning } from "./learning-check";
import type { LearningEntry, LocatedLearning, ReadWarning } from "./learning-entry";

/** The usable entries of a learnings.jsonl and the lines that were skipped. */
export interface ParsedLearnings {
  entries: LocatedLearning[];
  warnings: ReadWarning[];
}

/**
 * Parses the text of a gstack `learnings.jsonl`. Every line is validated against the
 * contracts' learning schema; a line that is not JSON or breaks the schema becomes a
 * warning naming the file and line, and the rest of the file is still read.
 *
 * The entry kept is the object `JSON.parse` produced, not the schema's output, so unknown
 * fields and the line's key order survive untouched.
 */
export function parseLearnings(text: string, file: string): ParsedLearnings {
  const { entries, warnings } = parseLearningLines(text, file, 0);
  return { entries, warnings };
}

/**
 * {@link parseLearnings} for text that starts after `linesBefore` lines of the file (its
 * lines are numbered from `linesBefore + 1`); also counts the newlines in `text`.
 */
export function parseLearningLines(
  text: string,
  file: string,
  linesBefore: number,
): ParsedLearnings & { newlines: number } {
  const entries: LocatedLearning[] = [];
  const warnings: ReadWarning[] = [];
  let start = 0;
  let lineNumber = linesBefore;
  const length = text.length;
  while (start <= length) {
    let end = text.indexOf("\n", start);
    if (end === -1) end = length;
    lineNumber++;
    const raw = text.slice(start, end).trim();
    start = end + 1;
    if (raw === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      warnings.push({ file, line: lineNumber, message: `not valid JSON (${(error as Error).message})` });
      continue;
    }
    // The schema itself runs only for lines the quick check cannot vouch for, so its messages
    // (field and rule) are exactly what they always were.
    const checked = isPlainValidLearning(value)
      ? undefined
      : checkValue("learning", value, { source: `${file}:${lineNumber}` });
    if (checked !== undefined && !checked.ok) {
      const issues = checked.error.issues.map(
        (issue) => `${issue.path || "(line)"} ${issue.message} [${issue.rule}]`,
      );
      warnings.push({ file, line: lineNumber, message: `not a learning: ${issues.join("; ")}` });
      continue;
    }
    entries.push({ file, line: lineNumber, entry: value as LearningEntry });
  }
  return { entries, warnings, newlines: lineNumber - linesBefore - 1 };
}

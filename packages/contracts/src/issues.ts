import type { z } from "zod";
import type { ContractIssue } from "./errors";

/** Renders a zod issue path as `a.b[2].c`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const segment of path) {
    if (typeof segment === "number") out += `[${segment}]`;
    else if (typeof segment === "string" && /^[A-Za-z_$][\w$-]*$/.test(segment))
      out += out ? `.${segment}` : segment;
    else out += `[${JSON.stringify(String(segment))}]`;
  }
  return out;
}

function describeExpected(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case "invalid_type":
      return issue.input === undefined
        ? "is required but missing"
        : `must be ${article(issue.expected)}, got ${describeValue(issue.input)}`;
    case "invalid_value":
      return `must be one of ${issue.values.map((value) => JSON.stringify(value)).join(", ")}, got ${describeValue(issue.input)}`;
    case "too_small":
      if (issue.origin === "string") return `must be at least ${issue.minimum} character(s) long`;
      if (issue.origin === "array") return `must have at least ${issue.minimum} item(s)`;
      return `must be ${issue.inclusive ? "at least" : "greater than"} ${String(issue.minimum)}`;
    case "too_big":
      if (issue.origin === "string") return `must be at most ${issue.maximum} characters long`;
      if (issue.origin === "array") return `must have at most ${issue.maximum} item(s)`;
      return `must be ${issue.inclusive ? "at most" : "less than"} ${String(issue.maximum)}`;
    case "invalid_format":
      if (issue.format === "regex") return `${issue.message ?? "does not match the required pattern"}`;
      return `must be a valid ${issue.format}`;
    case "unrecognized_keys":
      return `has unknown key(s) ${issue.keys.map((key) => JSON.stringify(key)).join(", ")}`;
    case "invalid_union": {
      const expected = unionAlternatives(issue.errors);
      const input = issue.errors.flat().find((inner) => inner.path.length === 0)?.input;
      return expected.length > 0
        ? `must be ${expected.join(" or ")}, got ${describeValue(input)}`
        : issue.message;
    }
    case "not_multiple_of":
      return `must be a multiple of ${String(issue.divisor)}`;
    default:
      return issue.message;
  }
}

/** The types a union accepts, read from the type errors of its alternatives. */
function unionAlternatives(alternatives: readonly (readonly z.core.$ZodIssue[])[]): string[] {
  const names: string[] = [];
  for (const issues of alternatives) {
    const top = issues.find((issue) => issue.code === "invalid_type" && issue.path.length === 0);
    if (top?.code !== "invalid_type") return [];
    const name = top.expected === "array" ? "a list" : article(top.expected);
    if (!names.includes(name)) names.push(name);
  }
  return names;
}

function article(word: string): string {
  if (word === "int") return "an integer";
  return /^[aeiou]/.test(word) ? `an ${word}` : `a ${word}`;
}

function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") {
    const shown = value.length > 40 ? `${value.slice(0, 37)}...` : value;
    return `the string ${JSON.stringify(shown)}`;
  }
  if (typeof value === "object") return "an object";
  return `${typeof value} ${String(value)}`;
}

/** Converts zod issues into contract issues with readable messages. */
export function toContractIssues(issues: readonly z.core.$ZodIssue[]): ContractIssue[] {
  return issues.map((issue) => {
    const hasCustomMessage =
      issue.code === "custom" || (issue.code === "invalid_format" && issue.format === "regex");
    return {
      path: formatPath(issue.path),
      rule: issue.code === "invalid_format" ? `format:${issue.format}` : issue.code,
      message: hasCustomMessage ? issue.message : describeExpected(issue),
    };
  });
}

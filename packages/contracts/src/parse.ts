import type { parseDocument as parseYamlDocument } from "yaml";
import { type DocumentKind, type DocumentOf, documentSchemas } from "./documents";
import { ContractError } from "./errors";
import { DECLINED, fastChecks } from "./fast-checks";
import { formatPath, toContractIssues } from "./issues";
import { builtSchema, loadYaml } from "./lazy";

/** Where a document came from; used in error messages. Defaults to `<input>`. */
export interface SourceOptions {
  source?: string;
}

/**
 * The path of the first object (at any depth) with its own `__proto__` key, which `JSON.parse`
 * and YAML make as an ordinary key but which changes an object's prototype when it is copied
 * by assignment. Undefined when there is none.
 */
function protoKeyPath(value: unknown, path: PropertyKey[] = []): PropertyKey[] | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const found = protoKeyPath(value[index], [...path, index]);
      if (found) return found;
    }
    return undefined;
  }
  if (Object.hasOwn(value, "__proto__")) return [...path, "__proto__"];
  for (const key of Object.keys(value)) {
    const found = protoKeyPath((value as Record<string, unknown>)[key], [...path, key]);
    if (found) return found;
  }
  return undefined;
}

/** The error for a value with a `__proto__` key anywhere, or undefined. Checked before the schema. */
export function protoKeyError(kind: DocumentKind, value: unknown, source: string): ContractError | undefined {
  const path = protoKeyPath(value);
  if (!path) return undefined;
  return new ContractError({
    kind,
    source,
    issues: [
      {
        path: formatPath(path),
        rule: "forbidden_key",
        message: 'is a key named "__proto__", which no document may have',
      },
    ],
  });
}

/**
 * Validates an already-decoded value as a document of the given kind. Returns the typed
 * value (defaults applied, unknown fields kept) or throws a {@link ContractError}.
 */
export function parseValue<K extends DocumentKind>(
  kind: K,
  value: unknown,
  options: SourceOptions = {},
): DocumentOf<K> {
  const refused = protoKeyError(kind, value, options.source ?? "<input>");
  if (refused) throw refused;
  const fastCheck = fastChecks[kind];
  if (fastCheck !== undefined) {
    const checked = fastCheck(value);
    if (checked !== DECLINED) return checked as DocumentOf<K>;
  }
  // reportInput: the messages say what was found ("got number 3"); without it zod drops the
  // input and a wrong type reads like a missing field.
  const result = builtSchema(documentSchemas[kind]).safeParse(value, { reportInput: true });
  if (result.success) return result.data as DocumentOf<K>;
  throw new ContractError({
    kind,
    source: options.source ?? "<input>",
    issues: toContractIssues(result.error.issues),
    cause: result.error,
  });
}

/** Like {@link parseValue}, but returns the issues instead of throwing. */
export function checkValue<K extends DocumentKind>(
  kind: K,
  value: unknown,
  options: SourceOptions = {},
): { ok: true; value: DocumentOf<K> } | { ok: false; error: ContractError } {
  try {
    return { ok: true, value: parseValue(kind, value, options) };
  } catch (error) {
    if (ContractError.isInstance(error)) return { ok: false, error };
    throw error;
  }
}

/** Parses JSON text and validates it. Syntax errors become a ContractError with the position. */
export function parseJson<K extends DocumentKind>(
  kind: K,
  text: string,
  options: SourceOptions = {},
): DocumentOf<K> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ContractError({
      kind,
      source: options.source ?? "<input>",
      issues: [{ path: "", rule: "json", message: `is not valid JSON: ${(error as Error).message}` }],
      cause: error,
    });
  }
  return parseValue(kind, value, options);
}

/**
 * Parses YAML text (core schema) and validates it. Syntax errors name line and column;
 * schema errors name the field and, where the YAML has it, the line of that field.
 */
export function parseYaml<K extends DocumentKind>(
  kind: K,
  text: string,
  options: SourceOptions = {},
): DocumentOf<K> {
  const source = options.source ?? "<input>";
  const document = loadYaml().parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (document.errors.length > 0) {
    throw new ContractError({
      kind,
      source,
      issues: document.errors.map((error) => ({
        path: "",
        rule: "yaml",
        message: `${error.linePos ? `line ${error.linePos[0].line}, column ${error.linePos[0].col}: ` : ""}${firstLineOf(error.message)}`,
      })),
    });
  }
  const value = document.toJS() ?? {};
  try {
    return parseValue(kind, value, options);
  } catch (error) {
    if (!ContractError.isInstance(error)) throw error;
    const lineCounter = locateLines(text);
    const issues = error.issues.map((issue, index) => {
      const zodIssue = (error.cause as { issues?: { path: PropertyKey[]; keys?: string[] }[] } | undefined)
        ?.issues?.[index];
      const position = zodIssue
        ? positionOf(document, zodIssue.path, lineCounter, zodIssue.keys?.[0])
        : undefined;
      return position
        ? { ...issue, message: `${issue.message} (line ${position.line}, column ${position.col})` }
        : issue;
    });
    throw new ContractError({ kind, source, issues, cause: error.cause });
  }
}

function locateLines(text: string): number[] {
  const starts = [0];
  for (let index = 0; index < text.length; index++) if (text[index] === "\n") starts.push(index + 1);
  return starts;
}

/** The first line of a yaml error message, without the position the message repeats. */
function firstLineOf(message: string): string {
  return message
    .split("\n")[0]!
    .replace(/ at line [0-9]+, column [0-9]+:?$/, "")
    .trim();
}

function toLineColumn(offset: number, lineStarts: number[]): { line: number; col: number } {
  let line = 0;
  while (line + 1 < lineStarts.length && lineStarts[line + 1]! <= offset) line++;
  return { line: line + 1, col: offset - lineStarts[line]! + 1 };
}

/**
 * The line and column of the node at `path`, or of its nearest ancestor in the YAML. With
 * `key` (an unknown key zod reports on the parent object) the position is that key's.
 */
function positionOf(
  document: ReturnType<typeof parseYamlDocument>,
  path: PropertyKey[],
  lineStarts: number[],
  key?: string,
): { line: number; col: number } | undefined {
  if (key !== undefined) {
    const parent = document.getIn(path as (string | number)[], true) as
      | { items?: { key?: { value?: unknown; range?: [number, number] } }[] }
      | undefined;
    const pair = parent?.items?.find((item) => item.key?.value === key);
    if (pair?.key?.range) return toLineColumn(pair.key.range[0], lineStarts);
  }
  for (let depth = path.length; depth >= 0; depth--) {
    const node = document.getIn(path.slice(0, depth) as (string | number)[], true) as
      | { range?: [number, number] }
      | undefined;
    const offset = node && typeof node === "object" && node.range ? node.range[0] : undefined;
    if (offset !== undefined) return toLineColumn(offset, lineStarts);
  }
  return undefined;
}

/** A line of a JSONL file that could not be used, with its 1-based line number. */
export interface JsonLineProblem {
  line: number;
  error: ContractError;
}

/**
 * Parses a JSON Lines file. Valid lines are returned in order with their line numbers;
 * invalid lines are returned as problems, so one corrupt line never loses the others.
 */
export function parseJsonLines<K extends DocumentKind>(
  kind: K,
  text: string,
  options: SourceOptions = {},
): { entries: { line: number; value: DocumentOf<K> }[]; problems: JsonLineProblem[] } {
  const source = options.source ?? "<input>";
  const entries: { line: number; value: DocumentOf<K> }[] = [];
  const problems: JsonLineProblem[] = [];
  const fastCheck = fastChecks[kind];
  const lines = text.split("\n");
  for (let index = 0; index < lines.length; index++) {
    const raw = lines[index]!.trim();
    if (raw === "") continue;
    // An ordinary line is taken straight away; the line's source text is only needed for an error.
    if (fastCheck !== undefined) {
      const checked = fastCheck(decodeOrDecline(raw));
      if (checked !== DECLINED) {
        entries.push({ line: index + 1, value: checked as DocumentOf<K> });
        continue;
      }
    }
    const result = checkValueFromJson(kind, raw, `${source}:${index + 1}`);
    if (result.ok) entries.push({ line: index + 1, value: result.value });
    else problems.push({ line: index + 1, error: result.error });
  }
  return { entries, problems };
}

/** The decoded JSON, or {@link DECLINED} for text that is not JSON (parseJson then says why). */
function decodeOrDecline(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return DECLINED;
  }
}

function checkValueFromJson<K extends DocumentKind>(kind: K, raw: string, source: string) {
  try {
    return { ok: true as const, value: parseJson(kind, raw, { source }) };
  } catch (error) {
    if (ContractError.isInstance(error)) return { ok: false as const, error };
    throw error;
  }
}

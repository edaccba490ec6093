import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type DocumentKind, documentSchemas } from "./documents";
import { ContractError } from "./errors";
import { DECLINED, fastChecks, isTimestamp } from "./fast-checks";
import { formatPath, toContractIssues } from "./issues";
import { jsonSchemaOf } from "./json-schema";
import { builtSchema } from "./lazy";
import { checkValue, parseJson, parseJsonLines, protoKeyError } from "./parse";
import { corpus } from "./schema-corpus.test-data";
import { timestampSchema } from "./schemas/common";

const kinds = Object.keys(fastChecks) as DocumentKind[];

/** What the zod schema alone makes of a value: the parsed value, or the error parseValue throws. */
function byZod(kind: DocumentKind, value: unknown) {
  // The one rule checked before the schema, for every kind.
  const refused = protoKeyError(kind, value, "<input>");
  if (refused) return { ok: false as const, message: refused.message };
  const result = builtSchema(documentSchemas[kind]).safeParse(value, { reportInput: true });
  return result.success
    ? { ok: true as const, value: result.data }
    : {
        ok: false as const,
        message: new ContractError({ kind, source: "<input>", issues: toContractIssues(result.error.issues) })
          .message,
      };
}

/** The same answer through the package, fast check first. */
function byPackage(kind: DocumentKind, value: unknown) {
  const result = checkValue(kind, value);
  return result.ok
    ? { ok: true as const, value: result.value }
    : { ok: false as const, message: result.error.message };
}

/** Equal values with their keys in the same order (JSON.stringify keeps the order). */
function expectSameValue(actual: unknown, expected: unknown, label: string) {
  expect(actual, label).toEqual(expected);
  expect(JSON.stringify(actual), label).toBe(JSON.stringify(expected));
}

/** Where a field sits in a document: keys of objects and indexes of lists. */
type FieldPath = (string | number)[];

interface ZodDefinition {
  type: string;
  innerType?: unknown;
  in?: unknown;
  shape?: Record<string, unknown>;
  element?: unknown;
  options?: unknown[];
}

/**
 * Every field of a zod schema, read from the schema itself: each key of each object shape,
 * and the item of each list (as index 0), at every depth, through optional, default and
 * union wrappers. A kind of schema this walk does not know fails the test, so a new kind of
 * nesting cannot hide fields from it.
 */
function fieldPaths(schema: unknown, prefix: FieldPath = []): FieldPath[] {
  const definition = (builtSchema(schema as object) as { _zod: { def: ZodDefinition } })._zod.def;
  switch (definition.type) {
    case "optional":
    case "default":
    case "prefault":
    case "nullable":
    case "nonoptional":
    case "readonly":
    case "catch":
      return fieldPaths(definition.innerType, prefix);
    case "pipe":
      return fieldPaths(definition.in, prefix);
    case "object":
      return Object.entries(definition.shape ?? {}).flatMap(([key, field]) => [
        [...prefix, key],
        ...fieldPaths(field, [...prefix, key]),
      ]);
    case "array":
      return [[...prefix, 0], ...fieldPaths(definition.element, [...prefix, 0])];
    case "union": {
      const seen = new Map<string, FieldPath>();
      for (const option of definition.options ?? [])
        for (const path of fieldPaths(option, prefix)) seen.set(JSON.stringify(path), path);
      return [...seen.values()];
    }
    case "string":
    case "number":
    case "int":
    case "boolean":
    case "enum":
    case "literal":
      return [];
    default:
      throw new Error(`fieldPaths: a ${definition.type} schema at ${formatPath(prefix) || "(document)"}`);
  }
}

/** The value at `path`, or undefined when any step of it is missing. */
function valueAt(document: unknown, path: FieldPath): unknown {
  let value = document;
  for (const step of path) {
    if (typeof value !== "object" || value === null) return undefined;
    value = (value as Record<string | number, unknown>)[step];
  }
  return value;
}

/** What {@link withValueAt} puts at a path to remove the field (a list item is left alone). */
const ABSENT = Symbol("absent");

/** A copy of `document` with `value` at `path` (whose parent must exist), or the field removed. */
function withValueAt(document: unknown, path: FieldPath, value: unknown): unknown {
  const copy = structuredClone(document);
  const parent = valueAt(copy, path.slice(0, -1)) as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (value !== ABSENT) parent[last] = value;
  else if (!Array.isArray(parent)) delete parent[last];
  return JSON.parse(JSON.stringify(copy)) as unknown;
}

/** The valid corpus documents of a kind that are objects. */
function validDocuments(kind: DocumentKind): Record<string, unknown>[] {
  return (Object.values(corpus[kind].valid) as unknown[]).filter(
    (document): document is Record<string, unknown> =>
      typeof document === "object" && document !== null && !Array.isArray(document),
  );
}

/**
 * Values that break a rule a field may have: every JSON type, and strings with the characters
 * and shapes the schemas refuse (a leading '-', control characters, bidirectional controls,
 * invisible characters, NUL), plus variants of the field's own valid value (wrong case, wrong
 * type, a character too many or a forbidden one added).
 */
function wrongValues(current: unknown): unknown[] {
  const values: unknown[] = [
    ABSENT,
    null,
    true,
    0,
    -1,
    1.5,
    1e21,
    "",
    " ",
    "x",
    "-x",
    "Plan",
    "\u200d",
    "a\u0000b",
    "\u001b[31mred\u001b[0m",
    "bell\u0007",
    "a\u007fb",
    "a\u009bb",
    "a\u202eb",
    "a\u2066b",
    "a\u200fb",
    "line\nbreak",
    "x".repeat(100_001),
    [],
    [1],
    [""],
    {},
    { x: 1 },
  ];
  if (typeof current === "string") {
    values.push(
      current.toUpperCase(),
      current.toLowerCase(),
      `${current.charAt(0).toUpperCase()}${current.slice(1)}`,
      `-${current}`,
      `${current}\u0000`,
      `${current}\u001b`,
      `\u202e${current}`,
      `${current}\n`,
      `${current}x`,
      current.slice(1),
      [current],
    );
  } else if (typeof current === "number") {
    values.push(current + 0.5, current + 1, current - 1, -current, String(current));
  } else if (typeof current === "boolean") values.push(String(current));
  else if (Array.isArray(current)) values.push([...current, 1], [...current, "\u001b"], current[0]);
  return values;
}

const timestamps = [
  "2026-04-03T14:30:00Z",
  "2026-04-03T14:30:00.5Z",
  "2026-04-03T14:30:00.123456789+05:30",
  "2024-02-29T23:59:59-23:59",
  "2000-02-29T00:00:00Z",
  "1900-02-29T00:00:00Z",
  "2023-02-29T00:00:00Z",
  "2026-04-31T00:00:00Z",
  "2026-04-03T14:30Z",
  "2026-04-03T24:00:00Z",
  "2026-04-03T14:60:00Z",
  "2026-04-03T14:30:60Z",
  "2026-04-03T14:30:00+24:00",
  "2026-04-03T14:30:00+05:60",
  "2026-04-03T14:30:00+0530",
  "2026-04-03T14:30:00.Z",
  "2026-04-03T14:30:00",
  "2026-04-03t14:30:00z",
  "2026-04-03 14:30:00Z",
  "2026-13-03T14:30:00Z",
  "2026-00-03T14:30:00Z",
  "2026-04-00T14:30:00Z",
  "２026-04-03T14:30:00Z",
];

/** Field values chosen to sit on both sides of each rule of the fast-checked kinds. */
const edgeValues: unknown[] = [
  ...timestamps,
  0,
  -1,
  1,
  10,
  11,
  59,
  60,
  3600,
  86_400,
  86_401,
  1.5,
  2 ** 53,
  1e21,
  "",
  "x",
  "🔐",
  "🔐".repeat(128),
  "🔐".repeat(129),
  "x".repeat(129),
  ".",
  "..",
  "a..b",
  "x".repeat(200),
  "x".repeat(201),
  "two words",
  "clé",
  "drizzle-not-prisma",
  "dispatch-x",
  "dispatch-",
  "claude",
  "codex",
  "cursor",
  "gemini",
  // agent names: any a config gives (1 to 32 lower-case letters, digits and '-')
  "claude-acp",
  "my-agent-2",
  "9",
  "a".repeat(32),
  "a".repeat(33),
  "-agent",
  "Claude",
  "claude_acp",
  "claude acp",
  "pattern",
  "pitfall",
  "observed",
  "cross-model",
  "timeline",
  "daemon",
  "openclaw",
  "https://host.example/x",
  "http://[::1]:8080/callback",
  "ftp://host.example/x",
  "https://user:secret@host.example/",
  "a".repeat(64),
  "A".repeat(64),
  [],
  [""],
  ["x", "y"],
  ["x", 1],
  {},
  { runtime: "openclaw", session_key: "agent:main:main" },
  { runtime: "openclaw", session_key: "agent:main:main", agent_id: "🔐".repeat(128), note: 1 },
  { runtime: "openclaw", session_key: "", session_id: "s" },
  { runtime: "other", session_key: "k" },
  null,
  true,
  false,
  // dispatch modes and refs, and text with the characters the schemas refuse
  "plan",
  "Plan",
  "PLAN",
  "execute",
  "Execute",
  "main",
  "HEAD~2",
  "-",
  "--upload-pack=x",
  "\u001b[31mred\u001b[0m",
  "bell\u0007",
  "a\u0000b",
  "a\u007fb",
  "a\u0085b",
  "a\u009bb",
  "\u200d",
  "a\u200db",
  "\u200f",
  "a\u200eb",
  "a\u061cb",
  "a\u202eb",
  "a\u2066b",
  "line\nbreak",
  "tab\there",
  "crlf\r\n",
  " ",
  "\u00a0",
  ["a\u0000b"],
  ["\u001b[2J"],
  ["line\nbreak"],
  // handoffs, timeline events and routing tables
  "gstack",
  "Wintermute",
  "-x",
  "pending",
  "picked_up",
  "done",
  "started",
  "completed",
  "847",
  "847s",
  "x".repeat(4096),
  "x".repeat(4097),
  "🔐".repeat(4096),
  2,
  [{ match: { task_type: "security" }, skills: ["gstack-cso"] }],
  [{ name: "docs", match: {}, load: ["docs/x.md"], note: "kept" }],
  [{ match: { task_type: ["a", "b"], files: ["src/**"] }, load: [], skills: ["s"] }],
  [{ match: { task_type: ["a", "b"] }, skills: [] }],
  [{ match: { misspelt: "x" }, skills: ["s"] }],
  [{ match: { files: [] }, skills: ["s"] }],
  [{ match: { project: "" }, skills: ["s"] }],
  [{ match: { agent: [""] }, skills: ["s"] }],
  [{ name: "", match: {}, skills: ["s"] }],
  [
    { match: { agent: ["gstack"] }, skills: ["s"] },
    { match: {}, skills: [""] },
  ],
];

const interesting = fc.oneof(
  { arbitrary: fc.jsonValue({ maxDepth: 2 }), weight: 2 },
  { arbitrary: fc.constantFrom(...edgeValues), weight: 5 },
);

/**
 * Characters and shapes on the edge of some rule: every kind of control character, the
 * bidirectional controls and marks, invisible characters, NUL, white space, a leading '-',
 * path separators and dots.
 */
const edgeCharacters = [
  "\u0000",
  "\u0001",
  "\u0007",
  "\u0008",
  "\t",
  "\n",
  "\u000b",
  "\u000c",
  "\r",
  "\u001b",
  "\u001f",
  " ",
  "-",
  ".",
  "/",
  "\\",
  "\u007f",
  "\u0080",
  "\u0085",
  "\u009b",
  "\u009f",
  "\u00a0",
  "\u00ad",
  "\u061c",
  "\u200b",
  "\u200d",
  "\u200e",
  "\u200f",
  "\u202a",
  "\u202c",
  "\u202e",
  "\u2066",
  "\u2069",
  "\u3164",
  "\ufeff",
  "\ud83d",
  "é",
  "🔐",
];

/**
 * Strings just inside and just outside every length bound the kind's published JSON Schema
 * names (its `minLength` and `maxLength`), in one-unit and two-unit characters.
 */
function boundaryStrings(kind: DocumentKind): string[] {
  const bounds = new Set<number>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(visit);
    else if (typeof node === "object" && node !== null) {
      for (const [key, value] of Object.entries(node)) {
        if ((key === "maxLength" || key === "minLength") && typeof value === "number") bounds.add(value);
        else visit(value);
      }
    }
  };
  visit(jsonSchemaOf(kind));
  return [...bounds].flatMap((bound) =>
    [bound - 1, bound, bound + 1]
      .filter((length) => length >= 0)
      .flatMap((length) => ["x".repeat(length), "🔐".repeat(length)]),
  );
}

/**
 * Values near a valid one: the same text in another case, with an edge character put in or
 * put first, as another type, one more or one less; or a string on a length bound.
 */
function nearValid(current: unknown, boundaries: string[]): fc.Arbitrary<unknown> {
  const anyType = fc.constantFrom<unknown>(null, true, 0, -1, 1.5, "", [], {});
  const options: fc.Arbitrary<unknown>[] = [anyType, fc.constantFrom(...edgeCharacters)];
  if (boundaries.length > 0) options.push(fc.constantFrom(...boundaries));
  if (typeof current === "string") {
    options.push(
      fc.constantFrom<unknown>(
        current.toUpperCase(),
        current.toLowerCase(),
        `${current.charAt(0).toUpperCase()}${current.slice(1)}`,
        current.slice(1),
        `${current}${current}`,
        [current],
        Number(current),
      ),
      fc
        .tuple(fc.nat(current.length), fc.constantFrom(...edgeCharacters), fc.boolean())
        .map(
          ([at, character, replace]) =>
            `${current.slice(0, at)}${character}${current.slice(replace ? at + 1 : at)}`,
        ),
    );
  } else if (typeof current === "number") {
    options.push(
      fc.constantFrom<unknown>(
        current + 1,
        current - 1,
        current + 0.5,
        -current,
        current * 1000,
        String(current),
      ),
    );
  } else if (typeof current === "boolean") options.push(fc.constant(String(current)));
  else if (Array.isArray(current)) {
    options.push(
      fc.constantFrom<unknown>([...current, 1], current.slice(1), current[0]),
      fc.constantFrom(...edgeCharacters).map((character) => [...current, character]),
    );
  } else if (typeof current === "object" && current !== null) {
    options.push(fc.constantFrom<unknown>({ ...current, extra: 1 }, [current]));
  }
  return fc.oneof(...options);
}

/**
 * `document` with the field at `path` set to `value` (removed for `undefined`), when its parent
 * is there to hold it. The objects and lists along the path are copied, never changed, so
 * neither the corpus nor a value shared between runs is altered.
 */
function withField(document: unknown, path: FieldPath, value: unknown): unknown {
  if (path.length === 0) return value;
  const [step, ...rest] = path as [string | number, ...FieldPath];
  if (
    typeof document !== "object" ||
    document === null ||
    Array.isArray(document) !== (typeof step === "number")
  )
    return document;
  const inner = (document as Record<string | number, unknown>)[step];
  if (rest.length > 0 && (typeof inner !== "object" || inner === null)) return document;
  const changed = rest.length > 0 ? withField(inner, rest, value) : value;
  if (Array.isArray(document)) {
    const copy = document.slice();
    if (changed === undefined) copy.splice(step as number, 1);
    else copy[step as number] = changed;
    return copy;
  }
  const copy = Object.assign(Object.create(Object.getPrototypeOf(document)), document) as Record<
    string,
    unknown
  >;
  if (changed === undefined) delete copy[step];
  else copy[step] = changed;
  return copy;
}

/**
 * Valid documents of a kind from the shared corpus (among them one with every optional field),
 * each edited at a few fields: any field of the zod schema at any depth, or one it does not
 * know, set to one of `values` or to a value near the field's own, or removed.
 */
function editedDocuments(kind: DocumentKind, values: fc.Arbitrary<unknown>) {
  const bases = validDocuments(kind);
  const paths: FieldPath[] = [...fieldPaths(documentSchemas[kind]), ["extra_field"]];
  const boundaries = boundaryStrings(kind);
  const edit = (base: Record<string, unknown>) =>
    fc
      .constantFrom(
        ...paths.filter((path) => path.length === 1 || valueAt(base, path.slice(0, -1)) !== undefined),
      )
      .chain((path) =>
        fc.tuple(
          fc.constant(path),
          fc.option(fc.oneof(values, nearValid(valueAt(base, path), boundaries)), { nil: undefined }),
        ),
      );
  return fc
    .constantFrom(...bases)
    .chain((base) => fc.tuple(fc.constant(base), fc.array(edit(base), { maxLength: 3 })))
    .map(([base, edits]) => {
      let document: unknown = base;
      for (const [path, value] of edits) document = withField(document, path, value);
      return document as Record<string, unknown>;
    });
}

describe.each(kinds)("the fast check of %s", (kind) => {
  const fastCheck = fastChecks[kind]!;

  it("accepts exactly the JSON documents zod accepts, with the same value", () => {
    let accepted = 0;
    let refused = 0;
    fc.assert(
      fc.property(editedDocuments(kind, interesting), (edited) => {
        const document = JSON.parse(JSON.stringify(edited)) as unknown;
        const zod = byZod(kind, document);
        const fast = fastCheck(document);
        const label = JSON.stringify(document).slice(0, 400);
        expect(fast !== DECLINED, label).toBe(zod.ok);
        if (zod.ok) {
          accepted++;
          expectSameValue(fast, zod.value, label);
        } else refused++;
      }),
      { numRuns: 2000 },
    );
    // Both verdicts are exercised, so the agreement says something.
    expect(accepted).toBeGreaterThan(200);
    expect(refused).toBeGreaterThan(200);
  });

  it("agrees with zod on every valid document with one field set to each edge value", () => {
    // The 100 000-character tasks are left to the property above; here they would only cost time.
    const bases = (Object.values(corpus[kind].valid) as Record<string, unknown>[]).filter(
      (document) => JSON.stringify(document).length < 10_000,
    );
    const fields = [
      ...new Set([...bases.flatMap((document) => Object.keys(document)), "reply_to", "target_agent"]),
    ];
    for (const base of bases)
      for (const field of fields)
        for (const value of edgeValues) {
          const document = JSON.parse(JSON.stringify({ ...base, [field]: value })) as unknown;
          const zod = byZod(kind, document);
          const fast = fastCheck(document);
          const label = `${field}: ${JSON.stringify(value).slice(0, 60)}`;
          expect(fast !== DECLINED, label).toBe(zod.ok);
          if (zod.ok) expectSameValue(fast, zod.value, label);
        }
  });

  it("accepts nothing zod refuses, and gives zod's value, for values JSON cannot carry", () => {
    const odd = fc.oneof(
      interesting,
      fc.constantFrom<unknown>(
        undefined,
        Number.NaN,
        Number.POSITIVE_INFINITY,
        -0,
        new Date(0),
        Object.create(null),
        Object.assign(Object.create(null), { runtime: "openclaw", session_key: "k" }),
        new String("x"),
        [undefined],
        ["x", undefined],
      ),
      fc.anything({ maxDepth: 1 }),
    );
    fc.assert(
      fc.property(editedDocuments(kind, odd), (document) => {
        const fast = fastCheck(document);
        if (fast === DECLINED) return;
        const zod = byZod(kind, document);
        const label = String(Object.keys(document));
        expect(zod.ok, label).toBe(true);
        if (zod.ok) expectSameValue(fast, zod.value, label);
      }),
      { numRuns: 1000 },
    );
  });

  it("leaves every result and every error message as zod alone gives them", () => {
    fc.assert(
      fc.property(editedDocuments(kind, interesting), (document) => {
        expect(byPackage(kind, document)).toEqual(byZod(kind, document));
      }),
      { numRuns: 500 },
    );
  });

  it("reads JSON Lines as zod alone reads each line", () => {
    const line = fc.oneof(
      {
        arbitrary: editedDocuments(kind, interesting).map((document) => JSON.stringify(document)),
        weight: 8,
      },
      { arbitrary: fc.constantFrom("", "   ", "{", "not json", "[]", "null", '{"__proto__":{}}'), weight: 2 },
    );
    fc.assert(
      fc.property(fc.array(line, { maxLength: 6 }), (lines) => {
        const source = "file.jsonl";
        const expected = {
          entries: [] as { line: number; value: unknown }[],
          problems: [] as { line: number; message: string }[],
        };
        lines.forEach((text, index) => {
          const raw = text.trim();
          if (raw === "") return;
          let value: unknown;
          try {
            value = JSON.parse(raw);
          } catch {
            expect(() => parseJson(kind, raw, { source: `${source}:${index + 1}` })).toThrow(ContractError);
            expected.problems.push({ line: index + 1, message: "json" });
            return;
          }
          const zod = byZod(kind, value);
          if (zod.ok) expected.entries.push({ line: index + 1, value: zod.value });
          else
            expected.problems.push({
              line: index + 1,
              message: zod.message.replace("<input>", `${source}:${index + 1}`),
            });
        });
        const actual = parseJsonLines(kind, lines.join("\n"), { source });
        expect(actual.entries).toEqual(expected.entries);
        expect(
          actual.problems.map(({ line, error }) => ({
            line,
            message: error.issues[0]?.rule === "json" ? "json" : error.message,
          })),
        ).toEqual(expected.problems);
      }),
      { numRuns: 300 },
    );
  });

  it.each(Object.entries(corpus[kind].valid))("accepts the corpus document %s", (_name, document) => {
    expect(fastCheck(JSON.parse(JSON.stringify(document)))).not.toBe(DECLINED);
  });
});

describe.each(kinds)("every field of the %s schema", (kind) => {
  const fastCheck = fastChecks[kind]!;
  const paths = fieldPaths(documentSchemas[kind]);
  const documents = validDocuments(kind);

  it("is found by walking the zod schema", () => {
    expect(paths.length).toBeGreaterThan(0);
  });

  it("is held by some valid corpus document, so it can be tried", () => {
    const missing = paths.filter((path) =>
      documents.every((document) => valueAt(document, path) === undefined),
    );
    expect(missing.map(formatPath)).toEqual([]);
  });

  it.each(paths.map((path) => [formatPath(path), path] as const))(
    "%s: the fast check refuses to take what zod refuses there",
    (name, path) => {
      const holder = documents.find((document) => valueAt(document, path) !== undefined);
      if (holder === undefined) return; // reported by the test above
      let refusedByZod = 0;
      for (const value of wrongValues(valueAt(holder, path))) {
        const document = withValueAt(holder, path, value);
        const zod = byZod(kind, document);
        const fast = fastCheck(document);
        const label = `${name} = ${value === ABSENT ? "(absent)" : JSON.stringify(value).slice(0, 60)}`;
        if (!zod.ok) refusedByZod++;
        if (fast === DECLINED) continue;
        expect(zod.ok, `the fast check took ${label}, which zod refuses`).toBe(true);
        if (zod.ok) expectSameValue(fast, zod.value, label);
      }
      // The field has rules, so the tries reached them.
      expect(refusedByZod, name).toBeGreaterThan(0);
    },
  );
});

describe("the fast check of routing tables", () => {
  const texts = fc.constantFrom<unknown>("", "x", "security", "src/**", 3, null);
  const oneOrMany = fc.oneof(texts, fc.array(texts, { maxLength: 2 }));
  const match = fc.record(
    {
      project: oneOrMany,
      task_type: oneOrMany,
      files: fc.array(texts, { maxLength: 2 }),
      branch: oneOrMany,
      agent: oneOrMany,
      misspelt: texts,
    },
    { requiredKeys: [] },
  );
  const route = fc.record(
    {
      name: texts,
      description: texts,
      match,
      load: fc.array(texts, { maxLength: 2 }),
      skills: fc.array(texts, { maxLength: 2 }),
      note: texts,
    },
    { requiredKeys: ["match"] },
  );
  const table = fc.record(
    { version: fc.constantFrom<unknown>(1, 2, "1"), routes: fc.array(route, { maxLength: 3 }) },
    { requiredKeys: ["routes"] },
  );

  it("accepts exactly the generated tables zod accepts, with the same value", () => {
    let accepted = 0;
    fc.assert(
      fc.property(table, (generated) => {
        const document = JSON.parse(JSON.stringify(generated)) as unknown;
        const zod = byZod("routing", document);
        const fast = fastChecks.routing!(document);
        const label = JSON.stringify(document);
        expect(fast !== DECLINED, label).toBe(zod.ok);
        if (zod.ok) {
          accepted++;
          expectSameValue(fast, zod.value, label);
        }
      }),
      { numRuns: 2000 },
    );
    expect(accepted).toBeGreaterThan(100);
  });
});

describe("isTimestamp", () => {
  it.each(timestamps)("agrees with timestampSchema on %s", (text) => {
    expect(isTimestamp(text)).toBe(timestampSchema.safeParse(text).success);
  });

  it("agrees with timestampSchema on generated date-times", () => {
    // Numbers a little beyond each field's range, now and then text that is not digits.
    const number = (maximum: number, width: number) =>
      fc.oneof(
        {
          arbitrary: fc.integer({ min: 0, max: maximum }).map((value) => String(value).padStart(width, "0")),
          weight: 30,
        },
        { arbitrary: fc.integer({ min: 0, max: maximum }).map(String), weight: 1 },
        {
          arbitrary: fc.string({ unit: fc.constantFrom(..."0123456789 a:-+.TZ"), maxLength: width + 1 }),
          weight: 1,
        },
      );
    const separator = (usual: string) =>
      fc.oneof(
        { arbitrary: fc.constant(usual), weight: 30 },
        { arbitrary: fc.constantFrom("", " ", "t", "z", ":", "-", "."), weight: 1 },
      );
    const candidate = fc
      .tuple(
        fc.oneof(number(9999, 4), fc.constantFrom("2000", "1900", "2024", "2100", "0000", "0400")),
        separator("-"),
        number(13, 2),
        separator("-"),
        number(32, 2),
        separator("T"),
        number(25, 2),
        separator(":"),
        number(61, 2),
        fc.oneof(
          { arbitrary: fc.tuple(separator(":"), number(61, 2)).map((pieces) => pieces.join("")), weight: 10 },
          { arbitrary: fc.constant(""), weight: 1 },
        ),
        fc.option(
          fc
            .string({ unit: fc.constantFrom(..."0123456789"), maxLength: 10 })
            .map((fraction) => `.${fraction}`),
          { nil: "" },
        ),
        fc.oneof(
          fc.constant("Z"),
          fc
            .tuple(fc.constantFrom("+", "-"), number(25, 2), separator(":"), number(61, 2))
            .map((pieces) => pieces.join("")),
          fc.constantFrom("", "z", "+05", "Z "),
        ),
      )
      .map((pieces) => pieces.join(""));
    let valid = 0;
    fc.assert(
      fc.property(candidate, (text) => {
        const expected = timestampSchema.safeParse(text).success;
        if (expected) valid++;
        expect(isTimestamp(text), text).toBe(expected);
      }),
      { numRuns: 5000 },
    );
    expect(valid).toBeGreaterThan(500);
  });
});

describe("documents the fast checks leave to zod", () => {
  it("refuses a document with a __proto__ key, naming where", () => {
    const text = '{"type":"pattern","key":"k","insight":"i","__proto__":{"polluted":true}}';
    const document = JSON.parse(text) as unknown;
    expect(fastChecks.learning!(document)).toBe(DECLINED);
    expect(() => parseJson("learning", text, { source: "l.jsonl" })).toThrow(
      '__proto__: is a key named "__proto__", which no document may have [forbidden_key]',
    );
  });

  it("parses an object without a prototype as zod does", () => {
    const document = Object.assign(Object.create(null), { routes: [] }) as unknown;
    expect(fastChecks.routing!(document)).toBe(DECLINED);
    expect(byPackage("routing", document)).toEqual(byZod("routing", document));
  });

  it("reads -0 as zod does", () => {
    const text = '{"ts":"2026-04-03T14:30:00Z","project":"baku","skill":"ship","duration":-0}';
    expect(Object.is(parseJson("activity-entry", text).duration, -0)).toBe(
      Object.is(
        (byZod("activity-entry", JSON.parse(text)) as { value: { duration: number } }).value.duration,
        -0,
      ),
    );
  });

  it.each([
    ["mode", "Plan"],
    ["mode", 1],
    ["mode", "PLAN"],
    ["base", 1],
    ["base", ""],
  ])(
    "refuses a dispatch's %s of %j at runtime, naming the field, as zod and the JSON Schema do",
    (field, value) => {
      const document = { ...(corpus.dispatch.valid["required fields only"] as object), [field]: value };
      expect(fastChecks.dispatch!(document)).toBe(DECLINED);
      expect(() => parseJson("dispatch", JSON.stringify(document), { source: "d.json" })).toThrow(
        new RegExp(`^d\\.json: invalid dispatch\\n  - ${field}: `),
      );
    },
  );

  it("fills in target_agent as zod does", () => {
    const text = JSON.stringify(corpus.dispatch.valid.minimal ?? Object.values(corpus.dispatch.valid)[0]);
    const parsed = parseJson("dispatch", text);
    expect(parsed.target_agent).toBe("claude");
    expectSameValue(parsed, (byZod("dispatch", JSON.parse(text)) as { value: unknown }).value, text);
  });
});

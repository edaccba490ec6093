import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isMap, isScalar, isSeq, LineCounter, type Node, parse, parseDocument } from "yaml";
import { parseRoutingYaml, parseRoutingYamlDocument, parseSimpleRoutingYaml } from "./parse-routing-yaml";
import { readSimpleYaml } from "./read-simple-yaml";

/**
 * What `yaml` makes of the text, as routing reads it (unique keys), with the line each
 * mapping and sequence starts on, or undefined when yaml reports an error.
 */
function byYaml(text: string) {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { uniqueKeys: true, prettyErrors: true, lineCounter });
  if (document.errors.length > 0) return undefined;
  return { value: document.toJS() as unknown, contents: document.contents, lineCounter };
}

/** Every disagreement between the simple reader's answer and yaml's, as text. */
function disagreements(text: string): string[] {
  const simple = readSimpleYaml(text);
  if (simple === undefined) return [];
  const yaml = byYaml(text);
  if (yaml === undefined) return ["the simple reader answered where yaml reports an error"];
  const problems: string[] = [];
  if (
    !isDeepStrictEqual(simple.value, yaml.value) ||
    JSON.stringify(simple.value) !== JSON.stringify(yaml.value)
  )
    problems.push(`value ${JSON.stringify(simple.value)} != yaml ${JSON.stringify(yaml.value)}`);
  let parsed: unknown;
  try {
    parsed = parse(text);
  } catch (error) {
    problems.push(`yaml.parse throws ${(error as Error).message}`);
  }
  if (!isDeepStrictEqual(simple.value, parsed)) problems.push("value differs from yaml.parse");
  const walk = (value: unknown, node: Node | null, where: string) => {
    if (typeof value !== "object" || value === null) return;
    if (node === null || !(isMap(node) || isSeq(node)) || !node.range) {
      problems.push(`${where}: yaml has no collection here`);
      return;
    }
    const expected = yaml.lineCounter.linePos(node.range[0]).line;
    const line = simple.lines.get(value);
    if (line !== expected) problems.push(`${where}: line ${line} != yaml ${expected}`);
    if (Array.isArray(value) && isSeq(node)) {
      value.forEach((item, index) => {
        walk(item, node.items[index] as Node, `${where}[${index}]`);
      });
    } else if (isMap(node)) {
      for (const pair of node.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : "?";
        walk((value as Record<string, unknown>)[key], pair.value as Node, `${where}.${key}`);
      }
    }
  };
  walk(simple.value, yaml.contents as Node | null, "$");
  return problems;
}

function expectAgreement(text: string) {
  expect(disagreements(text), JSON.stringify(text)).toEqual([]);
}

describe("readSimpleYaml", () => {
  it("reads a typical routing.yaml with the line of each route", () => {
    const text = [
      "# shared routing",
      "version: 1",
      "routes:",
      "  - name: security   # the careful ones",
      '    match: { task_type: "security", files: ["auth/**", \'*.pem\'] }',
      "    skills: [gstack-cso, gstack-careful]",
      "",
      "  -",
      "    match:",
      "      project: acme-*",
      "      branch:",
      "      - release/*",
      "      - 'hot''fix/*'",
      "    load: [kitsune-context]",
      '    description: "say \\"hi\\" \\u00e9"',
    ].join("\n");
    const simple = readSimpleYaml(text);
    if (simple === undefined) throw new Error("the simple reader gave up");
    expect(simple.value).toEqual({
      version: 1,
      routes: [
        {
          name: "security",
          match: { task_type: "security", files: ["auth/**", "*.pem"] },
          skills: ["gstack-cso", "gstack-careful"],
        },
        {
          match: { project: "acme-*", branch: ["release/*", "hot'fix/*"] },
          load: ["kitsune-context"],
          description: 'say "hi" é',
        },
      ],
    });
    const routes = (simple.value as { routes: object[] }).routes;
    expect(routes.map((route) => simple.lines.get(route))).toEqual([4, 9]);
    expectAgreement(text);
  });

  it("reads an empty document, or one of comments only, as null like yaml", () => {
    expect(readSimpleYaml("")?.value).toBeNull();
    expect(readSimpleYaml("# nothing yet\n\n   # still nothing\n")?.value).toBeNull();
    expectAgreement("# nothing yet\n");
  });

  it.each([
    ["an anchor and an alias", "a: &x [b]\nc: *x\n"],
    ["a tag", "a: !!str 1\n"],
    ["a block scalar", "a: |\n  text\n"],
    ["a folded scalar", "a: >\n  text\n"],
    ["a plain scalar over two lines", "a: one\n  two\n"],
    ["a quoted scalar over two lines", 'a: "one\n  two"\n'],
    ["a flow collection over two lines", "a: [b,\n  c]\n"],
    ["a second document", "a: 1\n---\nb: 2\n"],
    ["a document start marker", "---\na: 1\n"],
    ["a document end marker", "a: 1\n...\n"],
    ["a directive", "%YAML 1.2\n---\na: 1\n"],
    ["a tab", "a:\tb\n"],
    ["a carriage return", "a: b\r\nc: d\r\n"],
    ["a byte order mark", "\uFEFFa: b\n"],
    ["a duplicate key", "a: 1\na: 2\n"],
    ["a duplicate key in a flow mapping", "a: {b: 1, b: 2}\n"],
    ["a merge key", "a: {b: 1}\nc:\n  <<: {b: 2}\n"],
    ["a __proto__ key", "__proto__: {a: 1}\n"],
    ["a complex key", "? a\n: b\n"],
    ["a number other than a small integer", "a: 1.5\n"],
    ["a hexadecimal number", "a: 0x1F\n"],
    ["a key that is not a string", "1: a\n"],
    ["a null key", "~: a\n"],
    ["a trailing comma", "a: [b, c,]\n"],
    ["a flow pair in a sequence", "a: [b: c]\n"],
    ["a nested mapping on a compact key's line", "a: b: c\n"],
    ["a comment without a space before it", 'a: "b"#c\n'],
    ["bad indentation", "a:\n    b: 1\n  c: 2\n"],
    ["a scalar on the line below its key", "a:\n  b\n"],
    ["a plain scalar starting with an indicator", "a: -b\n"],
    ["an unknown escape", 'a: "\\q"\n'],
    ["an escaped surrogate", 'a: "\\ud800"\n'],
  ])("gives up on %s", (_, text) => {
    expect(readSimpleYaml(text)).toBeUndefined();
  });

  it.each([
    ["an indentless sequence", "routes:\n- a\n- b\nversion: 1\n"],
    ["a compact mapping in a sequence", "- a: 1\n  b: [x, 'y']\n- c: {}\n"],
    ["a sequence item on its own line", "-\n  a: 1\n- # note\n  b: 2\n"],
    ["odd indentation", "a:\n   b:\n        - c\n        - d\n   e: f\n"],
    ["keys with spaces and punctuation", "a b: c\na,b: d\n'q': e\n\"r\": f\n"],
    ["plain scalars with inner indicators", "a: b]c\nd: e#f\ng: h: i\n".replace("g: h: i\n", "g: h:i\n")],
    ["core-schema scalars", "a: ~\nb: null\nc: True\nd: FALSE\ne: 0\nf: 42\ng:\nh: yes\n"],
    ["quoted scalars", "a: 'it''s'\nb: \"\\\\ \\\" \\/ \\n \\t \\x41 \\u00e9\"\nc: ''\n"],
    ["non-ASCII text", "a: ünïcødé 😀\nb: [é, '😀']\n"],
    ["a document indented as a whole", "  a: 1\n  b: [c]\n"],
    ["comments everywhere", "# top\na: # after key\n  # between\n  - b # after item\n# end\n"],
  ])("agrees with yaml on %s", (_, text) => {
    expect(readSimpleYaml(text)).toBeDefined();
    expectAgreement(text);
  });
});

// ---- Generated documents ----------------------------------------------------------------

/** Names and globs as routing tables hold them. */
const plainText = fc.oneof(
  fc.constantFrom(
    "security",
    "gstack-cso",
    "calendar/**",
    "release/*",
    "acme-baku",
    "src/api/*.ts",
    "docs",
    "Ship It",
  ),
  fc.stringMatching(/^[a-z][a-z0-9_-]{0,6}(?:\/[a-z0-9*]{1,4}){0,2}$/),
);

/** Strings that are awkward in YAML: reserved words, numbers, indicators, quotes, spaces. */
const awkwardOnly = fc.oneof(
  fc.constantFrom(
    "security",
    "gstack-cso",
    "calendar/**",
    "*.md",
    ".github/**",
    "release/*",
    "acme-baku",
    "null",
    "~",
    "Null",
    "true",
    "True",
    "TRUE",
    "false",
    "False",
    "FALSE",
    "NULL",
    "yes",
    "no",
    "1",
    "01",
    "-1",
    "+1",
    "1.5",
    "1e3",
    ".inf",
    ".NaN",
    "0x1F",
    "0o17",
    "2fa",
    "-x",
    "?x",
    ":x",
    "a: b",
    "a:b",
    "a #b",
    "a#b",
    "#x",
    "&a",
    "*a",
    "!t",
    "|",
    "> x",
    "'q'",
    '"q"',
    "it's",
    'say "hi"',
    "a,b",
    "[x]",
    "{x}",
    "x]",
    "",
    " lead",
    "trail ",
    "a  b",
    "back\\slash",
    "ünï",
    "😀",
    "\u00a0nbsp",
    "__proto__",
    "<<",
    "@at",
    "`tick",
    "%pct",
    "---",
    "...",
  ),
  fc.string({
    unit: fc.constantFrom(
      "a",
      "b",
      "-",
      "_",
      "/",
      "*",
      ".",
      " ",
      ":",
      "#",
      "'",
      '"',
      ",",
      "[",
      "]",
      "{",
      "}",
      "\\",
      "é",
    ),
    maxLength: 8,
  }),
);

const awkwardText = fc.oneof({ weight: 5, arbitrary: plainText }, { weight: 2, arbitrary: awkwardOnly });

/** Routing-like documents whose strings come from `text`, with an extra field of any type. */
function routingDocument(text: fc.Arbitrary<string>) {
  const many = fc.oneof(text, fc.array(text, { minLength: 0, maxLength: 3 }));
  const route = fc.record(
    {
      name: text,
      description: text,
      match: fc.record(
        { project: many, task_type: many, files: fc.array(text, { maxLength: 3 }), branch: many },
        { requiredKeys: [] },
      ),
      load: fc.array(text, { maxLength: 3 }),
      skills: fc.array(text, { maxLength: 3 }),
      extra: fc.oneof(text, fc.integer({ min: -5, max: 2000 }), fc.boolean(), fc.constant(null)),
    },
    { requiredKeys: ["match"] },
  );
  return fc.record(
    {
      version: fc.oneof(fc.constant(1), fc.constant(2), fc.constant("1")),
      routes: fc.array(route, { maxLength: 4 }),
    },
    { requiredKeys: ["routes"] },
  );
}

/** A small deterministic random source, so one generated number picks every rendering choice. */
function chooser(seed: number) {
  let state = seed >>> 0 || 1;
  const next = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 4_294_967_296;
  };
  return {
    chance: (probability: number) => next() < probability,
    pick: <T>(options: readonly T[]): T => options[Math.floor(next() * options.length)]!,
  };
}

/**
 * Writes `value` as YAML text in randomly chosen styles: block or flow collections, plain,
 * single- or double-quoted scalars (plain even where that changes the meaning), odd
 * indentation, indentless sequences, comments and blank lines.
 */
function render(value: unknown, seed: number): string {
  const choose = chooser(seed);
  const scalar = (item: unknown, inFlow: boolean): string => {
    if (typeof item !== "string") return String(item);
    const style = choose.pick(["plain", "plain", "single", "double"]);
    if (style === "single") return `'${item.replaceAll("'", "''")}'`;
    if (style === "double") {
      const escaped = JSON.stringify(item);
      return choose.chance(0.2) ? escaped.replaceAll("/", "\\/") : escaped;
    }
    return inFlow && choose.chance(0.5) ? item.replace(/[,[\]{}]/g, "") : item;
  };
  const comment = () =>
    choose.chance(0.15)
      ? `${choose.pick([" ", "  ", ""])}# ${choose.pick(["note", "a: b", "#", "- x"])}`
      : "";
  const flow = (item: unknown): string => {
    if (Array.isArray(item)) return `[${item.map(flow).join(choose.pick([", ", ",", " , "]))}]`;
    if (typeof item === "object" && item !== null) {
      const pairs = Object.entries(item).map(
        ([key, entry]) =>
          `${scalar(key, true)}${choose.pick([": ", ": ", ": ", ": ", " : ", ":"])}${flow(entry)}`,
      );
      return `{${choose.pick([" ", ""])}${pairs.join(", ")}${choose.pick([" ", ""])}}`;
    }
    return scalar(item, true);
  };
  const lines: string[] = [];
  const block = (item: unknown, indent: number, prefix: string, inMapping: boolean): void => {
    const pad = " ".repeat(indent);
    const isCollection = typeof item === "object" && item !== null;
    const empty = isCollection && Object.keys(item).length === 0;
    if (!isCollection || empty || choose.chance(0.25)) {
      lines.push(`${prefix}${isCollection ? flow(item) : scalar(item, false)}${comment()}`);
      return;
    }
    const step = choose.pick([1, 2, 2, 2, 3, 4]);
    if (Array.isArray(item)) {
      const itemIndent = inMapping && choose.chance(0.3) ? indent : indent + step;
      lines.push(`${prefix}${comment()}`);
      for (const entry of item) {
        const dash = `${" ".repeat(itemIndent)}-${choose.pick([" ", " ", "  "])}`;
        if (
          typeof entry === "object" &&
          entry !== null &&
          !Array.isArray(entry) &&
          Object.keys(entry).length > 0 &&
          choose.chance(0.7)
        ) {
          // A mapping starting on the dash's line.
          const entries = Object.entries(entry);
          const column = dash.length;
          entries.forEach(([key, inner], index) => {
            const head = index === 0 ? dash : " ".repeat(column);
            block(inner, column, `${head}${scalar(key, false)}${choose.pick([":", ":", " :"])} `, true);
          });
        } else {
          block(entry, itemIndent, dash, false);
        }
        if (choose.chance(0.1)) lines.push(choose.pick(["", "# between", `${pad}  # indented`]));
      }
      return;
    }
    lines.push(`${prefix}${comment()}`);
    for (const [key, inner] of Object.entries(item)) {
      block(inner, indent + step, `${" ".repeat(indent + step)}${scalar(key, false)}: `, true);
    }
  };
  // The root mapping at column 0 (its entries are written by `block` at the chosen step).
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    for (const [key, inner] of Object.entries(value)) block(inner, 0, `${scalar(key, false)}: `, true);
  } else {
    block(value, 0, "", false);
  }
  // Trailing spaces after a key's ':' are harmless; trim them so lines look written by hand.
  return `${lines.map((line) => line.replace(/ +$/, "")).join("\n")}\n`;
}

const snippets = [
  "&a ",
  "*a",
  "---\n",
  "...\n",
  "\t",
  "\r",
  " #c",
  "#",
  "\n",
  "  ",
  " ",
  "- ",
  "-",
  ": ",
  ":",
  "? ",
  "!!str ",
  "|\n",
  ">-\n",
  "%YAML 1.2\n",
  '"',
  "'",
  ",",
  "[",
  "]",
  "{",
  "}",
  "\\",
  "\u00a0",
  "\ufeff",
  "<<: ",
  "- - ",
  "1",
  "x",
];

/** Random small edits of a document: inserted YAML syntax, deleted spans, shifted lines. */
const edits = fc.array(
  fc.tuple(
    fc.nat(),
    fc.constantFrom("insert", "delete", "indent", "dedent", "duplicate"),
    fc.constantFrom(...snippets),
    fc.nat(4),
  ),
  { maxLength: 3 },
);

function applyEdits(text: string, list: readonly [number, string, string, number][]): string {
  let result = text;
  for (const [where, kind, snippet, size] of list) {
    const at = result.length === 0 ? 0 : where % result.length;
    if (kind === "insert") result = result.slice(0, at) + snippet + result.slice(at);
    else if (kind === "delete") result = result.slice(0, at) + result.slice(at + size + 1);
    else {
      const lines = result.split("\n");
      const index = where % lines.length;
      if (kind === "indent") lines[index] = ` ${lines[index]}`;
      else if (kind === "dedent") lines[index] = lines[index]!.replace(/^ /, "");
      else lines.splice(index, 0, lines[index]!);
      result = lines.join("\n");
    }
  }
  return result;
}

describe("readSimpleYaml against yaml on generated routing documents", () => {
  it("answers exactly as yaml.parse, or gives up", () => {
    let answered = 0;
    let runs = 0;
    fc.assert(
      fc.property(routingDocument(awkwardText), fc.nat(), edits, (value, style, list) => {
        const text = applyEdits(render(value, style), list);
        runs++;
        if (readSimpleYaml(text) !== undefined) answered++;
        expect(disagreements(text), JSON.stringify(text)).toEqual([]);
      }),
      { numRuns: 4000 },
    );
    // The property says nothing if the reader always gives up: most documents here are plain.
    expect(answered / runs).toBeGreaterThan(0.1);
  });

  it("reads the plain routing documents people write", () => {
    let answered = 0;
    fc.assert(
      fc.property(routingDocument(plainText), fc.nat(), (value, style) => {
        const text = render(value, style);
        if (readSimpleYaml(text) !== undefined) answered++;
        expectAgreement(text);
      }),
      { numRuns: 1000 },
    );
    expect(answered).toBeGreaterThan(300);
  });

  it("leaves parseRoutingYaml's tables, route lines and errors as the yaml path gives them", () => {
    const outcome = (read: () => unknown) => {
      try {
        return { table: read() };
      } catch (error) {
        return { error: (error as Error).message };
      }
    };
    let fast = 0;
    fc.assert(
      fc.property(routingDocument(plainText), fc.nat(), edits, (value, style, list) => {
        const text = applyEdits(render(value, style), list);
        if (parseSimpleRoutingYaml(text, "/state/routing.yaml") !== undefined) fast++;
        expect(outcome(() => parseRoutingYaml(text, "/state/routing.yaml"))).toEqual(
          outcome(() => parseRoutingYamlDocument(text, "/state/routing.yaml")),
        );
      }),
      { numRuns: 1000 },
    );
    expect(fast).toBeGreaterThan(20);
  });
});

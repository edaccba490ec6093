/**
 * A reader for the plain YAML people write in routing.yaml, so a command that only reads the
 * table does not load the `yaml` library (which takes about as long as starting Node).
 *
 * It understands block mappings and sequences (indentless sequences under a key included),
 * one-line flow mappings and sequences, plain, single- and double-quoted one-line scalars,
 * and comments. On anything else — anchors, tags, block scalars, multi-line scalars or flow
 * collections, several documents, directives, tabs, carriage returns, duplicate keys,
 * numbers other than small decimal integers — it gives up and returns undefined, and the
 * caller hands the whole text to the real parser. When it does answer, the value equals what
 * `yaml.parse` returns (property-tested against it).
 */

/** The decoded document and the line (1-based) each mapping and sequence in it starts on. */
export interface SimpleYaml {
  value: unknown;
  lines: WeakMap<object, number>;
}

/** Thrown inside the reader to stop at the first construct it is not sure of. */
const GIVE_UP = Symbol("give up");

function giveUp(): never {
  throw GIVE_UP;
}

// Printable characters and line feeds only: no tab, carriage return, byte order mark, line or
// paragraph separator, control character or lone surrogate.
const PRINTABLE = /^[\n\x20-\x7E\u00A0-\u2027\u202A-\uD7FF\uE000-\uFEFE\uFF00-\uFFFD\u{10000}-\u{10FFFF}]*$/u;

// A plain scalar may not start with an indicator. '-', '?' and ':' followed by a non-space
// may start one in YAML, but are left to the real parser.
const INDICATOR = new Set("-?:,[]{}#&*!|>'\"%@`");

const NULL = /^(?:~|[Nn]ull|NULL)?$/;
const TRUE = /^(?:[Tt]rue|TRUE)$/;
const FALSE = /^(?:[Ff]alse|FALSE)$/;
const SMALL_INT = /^(?:0|[1-9][0-9]{0,14})$/;
// Every other plain scalar the core schema reads as a number (yaml's int, hex, octal and
// float tests, widened): given up on rather than converted.
const NUMBER_LIKE = /^[-+]?(?:[0-9]|\.[0-9]|\.inf|\.Inf|\.INF)|^\.(?:nan|NaN|NAN)$|^0[xo]/;

/** The core-schema value of a plain scalar. */
function resolvePlain(text: string): unknown {
  if (NULL.test(text)) return null;
  if (TRUE.test(text)) return true;
  if (FALSE.test(text)) return false;
  if (SMALL_INT.test(text)) return Number(text);
  if (NUMBER_LIKE.test(text)) giveUp();
  return text;
}

interface Line {
  /** 1-based line number in the text. */
  number: number;
  indent: number;
  text: string;
}

const SIMPLE_ESCAPES: Record<string, string> = {
  "\\": "\\",
  '"': '"',
  "/": "/",
  n: "\n",
  t: "\t",
  r: "\r",
  b: "\b",
  f: "\f",
  "0": "\0",
};

/** A one-line quoted scalar starting at `start`: its value and the index after it. */
function readQuoted(text: string, start: number): [string, number] {
  const quote = text[start];
  let value = "";
  let index = start + 1;
  while (index < text.length) {
    const char = text[index]!;
    if (quote === "'") {
      if (char === "'") {
        if (text[index + 1] !== "'") return [value, index + 1];
        value += "'";
        index += 2;
        continue;
      }
    } else if (char === '"') {
      return [value, index + 1];
    } else if (char === "\\") {
      const escaped = text[index + 1] ?? "";
      const simple = SIMPLE_ESCAPES[escaped];
      if (simple !== undefined) {
        value += simple;
        index += 2;
        continue;
      }
      if (escaped === "x" || escaped === "u") {
        const digits = escaped === "x" ? 2 : 4;
        const hex = text.slice(index + 2, index + 2 + digits);
        if (!/^[0-9A-Fa-f]+$/.test(hex) || hex.length !== digits) giveUp();
        const code = Number.parseInt(hex, 16);
        if (code >= 0xd800 && code <= 0xdfff) giveUp();
        value += String.fromCharCode(code);
        index += 2 + digits;
        continue;
      }
      giveUp();
    }
    value += char;
    index++;
  }
  // Not closed on this line: a multi-line scalar, or an error.
  return giveUp();
}

/** True when only spaces and a comment (preceded by a space) remain from `index`. */
function restIsEmpty(text: string, index: number): boolean {
  let at = index;
  while (text[at] === " ") at++;
  if (at === text.length) return true;
  return text[at] === "#" && (at === index ? at === 0 || text[at - 1] === " " : true);
}

/** Without trailing spaces (only U+0020: YAML's other white space, tab, is given up on). */
function trimSpaces(text: string): string {
  let end = text.length;
  while (end > 0 && text[end - 1] === " ") end--;
  return text.slice(0, end);
}

function skipSpaces(text: string, index: number): number {
  let at = index;
  while (text[at] === " ") at++;
  return at;
}

const FLOW_STOP = new Set(",[]{}");

/**
 * A plain scalar inside a flow collection: runs to a flow indicator or to ': '. A ':' followed
 * by anything else, or a comment, makes the reader give up.
 */
function readFlowPlain(text: string, start: number): [string, number] {
  if (INDICATOR.has(text[start] ?? "")) giveUp();
  let index = start;
  while (index < text.length) {
    const char = text[index]!;
    if (FLOW_STOP.has(char)) break;
    if (char === ":") {
      if (text[index + 1] === " ") break;
      giveUp();
    }
    if (char === "#" && text[index - 1] === " ") giveUp();
    index++;
  }
  if (index === text.length) giveUp();
  const raw = trimSpaces(text.slice(start, index));
  if (raw.length === 0) giveUp();
  return [raw, index];
}

/** A mapping key: a quoted or plain scalar that reads as a string, not `<<` or `__proto__`. */
function checkedKey(key: string, plain: boolean): string {
  if (plain && resolvePlain(key) !== key) giveUp();
  if (key === "__proto__" || key === "<<") giveUp();
  return key;
}

/** The reader over the significant lines of one document. */
class Reader {
  private index = 0;
  readonly lines = new WeakMap<object, number>();

  constructor(private readonly all: readonly Line[]) {}

  read(): unknown {
    const first = this.all[0];
    if (first === undefined) return null;
    const value = this.blockNode(first, first.indent, 0);
    if (this.index !== this.all.length) giveUp();
    return value;
  }

  private get current(): Line | undefined {
    return this.all[this.index];
  }

  /**
   * A block collection starting at column `column` of `line` (the current line). A scalar or
   * flow collection on a line of its own is given up on.
   */
  private blockNode(line: Line, column: number, parentIndent: number): unknown {
    if (column < parentIndent) giveUp();
    const text = line.text;
    if (text[column] === "-" && (column + 1 === text.length || text[column + 1] === " "))
      return this.blockSequence(column);
    if (this.keyEnd(text, column) !== undefined) return this.blockMapping(column);
    return giveUp();
  }

  /**
   * Where the key starting at `column` ends (the index of its ':'), or undefined when the
   * text there is not a `key:` entry.
   */
  private keyEnd(text: string, column: number): number | undefined {
    const first = text[column];
    if (first === '"' || first === "'") {
      const after = skipSpaces(text, readQuoted(text, column)[1]);
      return text[after] === ":" && (after + 1 === text.length || text[after + 1] === " ")
        ? after
        : undefined;
    }
    if (first === undefined || INDICATOR.has(first)) return undefined;
    for (let index = column; index < text.length; index++) {
      const char = text[index]!;
      if (char === "#" && text[index - 1] === " ") return undefined;
      if (char === ":" && (index + 1 === text.length || text[index + 1] === " ")) return index;
    }
    return undefined;
  }

  /** A block mapping whose keys sit at `column`, the first on the current line. */
  private blockMapping(column: number): Record<string, unknown> {
    const mapping: Record<string, unknown> = {};
    this.lines.set(mapping, this.current!.number);
    let first = true;
    for (;;) {
      const line = this.current;
      if (line === undefined) break;
      if (!first) {
        if (line.indent < column) break;
        if (line.indent > column) giveUp();
      }
      first = false;
      const text = line.text;
      const colon = this.keyEnd(text, column);
      if (colon === undefined) giveUp();
      // yaml refuses an implicit key longer than 1024 characters.
      if (colon - column > 1000) giveUp();
      const quoted = text[column] === '"' || text[column] === "'";
      const key = checkedKey(
        quoted ? readQuoted(text, column)[0] : trimSpaces(text.slice(column, colon)),
        !quoted,
      );
      if (Object.hasOwn(mapping, key)) giveUp();
      mapping[key] = this.valueAfter(line, colon + 1, column, true);
    }
    return mapping;
  }

  /** A block sequence whose '-' sit at `column`, the first on the current line. */
  private blockSequence(column: number): unknown[] {
    const sequence: unknown[] = [];
    this.lines.set(sequence, this.current!.number);
    for (;;) {
      const line = this.current;
      if (line === undefined || line.indent < column) break;
      if (line.indent > column) giveUp();
      const text = line.text;
      if (text[column] !== "-" || (column + 1 < text.length && text[column + 1] !== " ")) break;
      const start = skipSpaces(text, column + 1);
      if (text[start] === "-") giveUp();
      if (start < text.length && text[start] !== "#" && this.keyEnd(text, start) !== undefined) {
        // A mapping starting on the item's line: its keys sit at `start`. It ends at a line
        // indented less than that; a line indented between the '-' and `start` is an error.
        sequence.push(this.blockMapping(start));
        const next = this.current;
        if (next !== undefined && next.indent > column && next.indent < start) giveUp();
        continue;
      }
      sequence.push(this.valueAfter(line, column + 1, column, false));
    }
    return sequence;
  }

  /**
   * The value after a key's ':' or an item's '-' at `from` on `line` (the current line):
   * inline, or a block collection on the lines below, or null. Leaves the reader after it.
   */
  private valueAfter(line: Line, from: number, indent: number, inMapping: boolean): unknown {
    const text = line.text;
    const start = skipSpaces(text, from);
    this.index++;
    if (start === text.length || (text[start] === "#" && start > from)) {
      const next = this.current;
      if (next === undefined || next.indent < indent) return null;
      if (next.indent > indent) return this.blockNode(next, next.indent, indent + 1);
      // A sequence under a mapping's key may sit at the key's own indentation.
      if (
        inMapping &&
        next.text[indent] === "-" &&
        (next.text.length === indent + 1 || next.text[indent + 1] === " ")
      )
        return this.blockSequence(indent);
      return null;
    }
    if (text[start] === "#") giveUp();
    const [value, after] = this.inline(text, start, line.number);
    // A deeper line after it (a continued plain scalar, or an error) stops the enclosing
    // mapping or sequence, which gives up on it.
    if (!restIsEmpty(text, after)) giveUp();
    return value;
  }

  /** A value on one line: flow collection, quoted or plain scalar. */
  private inline(text: string, start: number, lineNumber: number): [unknown, number] {
    const first = text[start]!;
    if (first === "[" || first === "{") return this.flow(text, start, lineNumber);
    if (first === '"' || first === "'") return readQuoted(text, start);
    if (INDICATOR.has(first)) giveUp();
    let end = text.length;
    for (let index = start; index < text.length; index++) {
      const char = text[index]!;
      if (char === "#" && text[index - 1] === " ") {
        end = index;
        break;
      }
      if (char === ":" && (index + 1 === text.length || text[index + 1] === " ")) giveUp();
    }
    return [resolvePlain(trimSpaces(text.slice(start, end))), end];
  }

  /** A flow collection closed on the same line. */
  private flow(text: string, start: number, lineNumber: number): [unknown, number] {
    const close = text[start] === "[" ? "]" : "}";
    const collection: unknown[] | Record<string, unknown> = close === "]" ? [] : {};
    this.lines.set(collection, lineNumber);
    let index = skipSpaces(text, start + 1);
    if (text[index] === close) return [collection, index + 1];
    for (;;) {
      if (Array.isArray(collection)) {
        const [value, after] = this.flowValue(text, index, lineNumber);
        collection.push(value);
        index = skipSpaces(text, after);
        if (text[index] === ":") giveUp();
      } else {
        const quoted = text[index] === '"' || text[index] === "'";
        const [rawKey, keyEnd] = quoted ? readQuoted(text, index) : readFlowPlain(text, index);
        const afterKey = skipSpaces(text, keyEnd);
        if (afterKey - index > 1000) giveUp();
        const key = checkedKey(rawKey, !quoted);
        if (text[afterKey] !== ":" || text[afterKey + 1] !== " ") giveUp();
        if (Object.hasOwn(collection, key)) giveUp();
        const [value, after] = this.flowValue(text, skipSpaces(text, afterKey + 1), lineNumber);
        collection[key] = value;
        index = skipSpaces(text, after);
      }
      if (text[index] === close) return [collection, index + 1];
      if (text[index] !== ",") giveUp();
      index = skipSpaces(text, index + 1);
      // A trailing comma, an empty entry or the end of the line: left to the real parser.
      if (index >= text.length || text[index] === close || text[index] === ",") giveUp();
    }
  }

  private flowValue(text: string, start: number, lineNumber: number): [unknown, number] {
    const first = text[start];
    if (first === undefined) giveUp();
    if (first === "[" || first === "{") return this.flow(text, start, lineNumber);
    if (first === '"' || first === "'") return readQuoted(text, start);
    const [raw, after] = readFlowPlain(text, start);
    return [resolvePlain(raw), after];
  }
}

/**
 * Reads `text` when it uses only the simple YAML described above; otherwise returns
 * undefined. An empty document (or one of only comments) reads as null, as in `yaml`.
 */
export function readSimpleYaml(text: string): SimpleYaml | undefined {
  if (!PRINTABLE.test(text)) return undefined;
  const lines: Line[] = [];
  const raw = text.split("\n");
  for (let index = 0; index < raw.length; index++) {
    const content = raw[index]!;
    let indent = 0;
    while (content[indent] === " ") indent++;
    if (indent === content.length || content[indent] === "#") continue;
    if (content.startsWith("---", indent) || content.startsWith("...", indent) || content[indent] === "%")
      return undefined;
    lines.push({ number: index + 1, indent, text: content });
  }
  const reader = new Reader(lines);
  try {
    return { value: reader.read(), lines: reader.lines };
  } catch (error) {
    if (error === GIVE_UP) return undefined;
    throw error;
  }
}

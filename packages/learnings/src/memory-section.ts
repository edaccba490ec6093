import { learningTypes } from "@gstack/contracts";
import { digestOf } from "./fingerprint";
import type { LearningEntry } from "./learning-entry";
import { DEFAULT_CONFIDENCE } from "./reading-rules";

/** Marker of the comment line that carries a learning's data in a memory section. */
export const DATA_MARKER = "gstack-learning";
/** Version of the section encoding, stored in every data comment. */
export const ENCODING_VERSION = 1;

const LEARNING_TITLE =
  /^(?:gstack[ \t]+)?learning(?![a-z])[ \t]*[:\-–—·|]?[ \t]*([A-Za-z]+)[ \t]*[/:·|—–\-\s][ \t]*`?([A-Za-z0-9_-]+)`?[ \t]*(?:<!--[ \t]*importance:[ \t]*(\d+)[ \t]*-->)?[ \t]*$/i;

const WRITTEN_TITLE = /^Learning: ([a-z]+)\/([A-Za-z0-9_-]+) <!-- importance: (\d+) -->$/;

/** The parts of a `## Learning: type/key` heading; the type is checked by the caller. */
export interface LearningTitle {
  type: string;
  key: string;
  importance: number | undefined;
}

/** Reads a section title such as `Learning: pitfall/use-vitest <!-- importance: 7 -->`. */
export function parseLearningTitle(title: string): LearningTitle | undefined {
  // The heading this package writes reads the same under the lenient pattern, in one way only.
  const written = WRITTEN_TITLE.exec(title);
  if (written) return { type: written[1]!.toLowerCase(), key: written[2]!, importance: Number(written[3]) };
  return parseLearningTitleLeniently(title);
}

/** True when {@link parseLearningTitle} reads the title (without building its parts). */
export function isLearningTitle(title: string): boolean {
  return WRITTEN_TITLE.test(title) || parseLearningTitleLeniently(title) !== undefined;
}

/** {@link parseLearningTitle} by the lenient pattern alone. */
export function parseLearningTitleLeniently(title: string): LearningTitle | undefined {
  const match = LEARNING_TITLE.exec(title.trim());
  if (!match) return undefined;
  const importance = match[3] === undefined ? undefined : Number(match[3]);
  return { type: match[1]!.toLowerCase(), key: match[2]!, importance };
}

// Characters a Markdown file cannot carry exactly: lone surrogates (UTF-8 has no bytes for
// them), carriage returns (editors rewrite line endings), other control characters, line
// separators and byte-order marks that tools strip.
const NOT_BODY_SAFE = /[\ud800-\udfff]|[\r\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\ufeff]/u;
const TRAILING_SPACE = /[ \t]\n|[ \t]$/;

/**
 * True when an insight can be shown as the section's quoted text and read back exactly,
 * even after an editor strips trailing spaces or rewrites line endings.
 */
export function insightFitsBody(insight: string): boolean {
  // Printable ASCII, newlines and tabs hold none of the characters above (the usual case).
  if (!PLAIN_BODY.test(insight)) {
    if (NOT_BODY_SAFE.test(insight)) return false;
  }
  return !TRAILING_SPACE.test(insight);
}

const PLAIN_BODY = /^[\t\n\x20-\x7e]*$/;

/** Quotes text line by line (`> line`, `>` for an empty line). */
export function quoteLines(text: string): string[] {
  return text.split("\n").map((line) => (line === "" ? ">" : `> ${line}`));
}

/** Reverses {@link quoteLines} for one line. */
export function unquoteLine(line: string): string {
  if (line.startsWith("> ")) return line.slice(2);
  return line.slice(1);
}

const COMMENT_UNSAFE: Record<string, string> = {
  "<": "\\u003c",
  ">": "\\u003e",
  "\u2028": "\\u2028",
  "\u2029": "\\u2029",
};

/**
 * Makes one line of JSON safe inside an HTML comment: `<` and `>` only occur inside JSON
 * strings, where their `\\u` escapes mean the same, so `-->` and `<!--` can never appear.
 */
export function escapeJsonForComment(json: string): string {
  if (!COMMENT_UNSAFE_ANY.test(json)) return json;
  return json.replace(/[<>\u2028\u2029]/g, (character) => COMMENT_UNSAFE[character]!);
}

const COMMENT_UNSAFE_ANY = /[<>\u2028\u2029]/;

function entryJson(entry: LearningEntry, insightInBody: boolean): string {
  // Spreading keeps every own key in place (an own `__proto__` included); overwriting
  // `insight` keeps its position, so the key order of the line survives.
  return JSON.stringify(insightInBody ? { ...entry, insight: null } : entry);
}

/** Maps a stored confidence to OpenClaw's importance (1–10). */
export function importanceOf(entry: { confidence?: unknown }): number {
  const confidence =
    typeof entry.confidence === "number" && Number.isFinite(entry.confidence)
      ? entry.confidence
      : DEFAULT_CONFIDENCE;
  return Math.min(10, Math.max(1, Math.round(confidence)));
}

/**
 * True for printable ASCII without '<', '>', or spaces at either end or in runs, which needs no
 * cleaning (the usual case): words of those characters, single spaces between them. A loop over
 * the characters, as the values are short and a regular expression's call costs more.
 */
function isPlainDisplay(raw: string): boolean {
  const length = raw.length;
  // A space at the start counts as one after a space.
  let afterSpace = true;
  for (let index = 0; index < length; index++) {
    const code = raw.charCodeAt(index);
    if (code === 0x20) {
      if (afterSpace) return false;
      afterSpace = true;
    } else if (code < 0x21 || code > 0x7e || code === 0x3c || code === 0x3e) {
      return false;
    } else {
      afterSpace = false;
    }
  }
  return !afterSpace;
}

function display(value: unknown, limit = 80): string {
  const raw = String(value);
  if (raw.length <= limit && isPlainDisplay(raw)) return raw;
  const text = raw
    .replace(
      /[\u0000-\u001f\u007f-\u009f\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\ud800-\udfff]/gu,
      " ",
    )
    .replace(/[<>]/g, (character) => (character === "<" ? "‹" : "›"))
    .replace(/\s+/g, " ")
    .trim();
  if (text.length <= limit) return text;
  const characters = Array.from(text);
  return characters.length > limit ? `${characters.slice(0, limit - 1).join("")}…` : text;
}

function metadataLine(entry: LearningEntry, importance: number): string {
  // Built as one string (parts joined by " · "), without an array per section.
  let line = typeof entry.source === "string" ? `(${display(entry.source)} · ` : "(";
  line += `confidence ${importance}/10`;
  if (typeof entry.ts === "string") line += ` · ${display(entry.ts.slice(0, 10))}`;
  if (typeof entry.skill === "string" && entry.skill !== "") line += ` · skill ${display(entry.skill, 40)}`;
  const files = entry.files;
  if (Array.isArray(files) && files.length > 0) {
    line += ` · files: ${display(files[0], 60)}`;
    const shown = Math.min(files.length, 5);
    for (let index = 1; index < shown; index++) line += `, ${display(files[index], 60)}`;
    if (files.length > 5) line += `, +${files.length - 5} more`;
  }
  return `${line})`;
}

/**
 * Renders one learning as a Markdown section: a `## Learning: type/key` heading carrying
 * OpenClaw's importance comment, the insight quoted right under it, a line of metadata
 * for people, and one comment line holding everything else as JSON. The JSON never
 * contains `<` or `>`, so no value can end the comment early; when the insight cannot be
 * carried exactly as text (see {@link insightFitsBody}) it goes into the JSON too and the
 * quote shows a cleaned-up copy.
 */
export function renderSection(entry: LearningEntry): string {
  const insight = typeof entry.insight === "string" ? entry.insight : "";
  const inBody = typeof entry.insight === "string" && insightFitsBody(insight);
  const shown = inBody ? insight : display(insight, 4000);
  // Only the entry's JSON can hold a character the comment must escape (the rest is ASCII
  // without '<' or '>'), so only it is escaped.
  const json = escapeJsonForComment(entryJson(entry, inBody));
  const payload = inBody
    ? `{"v":${ENCODING_VERSION},"body":"${digestOf(insight)}","entry":${json}}`
    : `{"v":${ENCODING_VERSION},"entry":${json}}`;
  const importance = importanceOf(entry);
  const heading = `## Learning: ${display(entry.type, 40)}/${display(entry.key, 120)} <!-- importance: ${importance} -->`;
  const quoted = shown.includes("\n") ? quoteLines(shown).join("\n") : shown === "" ? ">" : `> ${shown}`;
  return `${heading}\n${quoted}\n\n${metadataLine(entry, importance)}\n<!-- ${DATA_MARKER} ${payload} -->\n`;
}

/** A section written by {@link renderSection}, read back. */
export interface DecodedSection {
  entry: LearningEntry;
  /**
   * True when the quoted insight no longer matches what was written: someone edited it in
   * the memory file, and `entry.insight` holds the edited text.
   */
  edited: boolean;
}

const DATA_PREFIX = `<!-- ${DATA_MARKER} {`;

function isDataLine(line: string): boolean {
  return line.startsWith(DATA_PREFIX) && line.endsWith("} -->");
}

/** Finds the data comment of a section, if it has one. */
export function findDataLine(lines: readonly string[]): number {
  for (let index = lines.length - 1; index >= 0; index--) if (isDataLine(lines[index]!)) return index;
  return -1;
}

/**
 * Reads a section written by {@link renderSection} back into the exact entry. `lines` are
 * the lines under the heading. Throws an Error with a reason when the data comment is
 * damaged.
 */
export function decodeSection(lines: readonly string[], dataIndex = findDataLine(lines)): DecodedSection {
  if (dataIndex === -1) throw new Error(`no "${DATA_MARKER}" data comment`);
  const dataLine = lines[dataIndex]!;
  const payload = JSON.parse(dataLine.slice(DATA_PREFIX.length - 1, dataLine.length - 4)) as {
    v?: unknown;
    body?: unknown;
    entry?: unknown;
  };
  if (payload.v !== ENCODING_VERSION)
    throw new Error(`unsupported encoding version ${JSON.stringify(payload.v)}`);
  if (typeof payload.entry !== "object" || payload.entry === null || Array.isArray(payload.entry)) {
    throw new Error("the data comment holds no entry object");
  }
  const entry = payload.entry as LearningEntry;
  if (payload.body === undefined) return { entry, edited: false };
  if (typeof payload.body !== "string") throw new Error("the data comment's body digest is not a string");
  const insight = quotedInsight(lines);
  entry.insight = insight;
  return { entry, edited: digestOf(insight) !== payload.body };
}

const BODY_PREFIX = /^\{"v":1,"body":"([0-9a-f]{16})","entry":\{/;

function quotedInsight(lines: readonly string[]): string {
  const quoted: string[] = [];
  for (const line of lines) {
    if (!line.startsWith(">")) break;
    quoted.push(unquoteLine(line));
  }
  return quoted.join("\n");
}

/**
 * True when a section written by {@link renderSection} is certainly unedited, decided
 * without decoding its JSON: the digest in the comment matches the quoted insight. False
 * means "decode it to know" (edited, insight inside the JSON, or not our usual layout).
 */
export function isUneditedSection(lines: readonly string[], dataIndex: number): boolean {
  const dataLine = lines[dataIndex]!;
  const head = BODY_PREFIX.exec(dataLine.slice(DATA_PREFIX.length - 1, DATA_PREFIX.length + 60));
  return head !== null && digestOf(quotedInsight(lines)) === head[1];
}

/**
 * {@link isUneditedSection} for a block given as offsets into `source` (its lines, under the
 * heading, run from `start` to `end`), without making a string per line. It answers true only
 * when the block's lines hold a data comment and {@link isUneditedSection} answers true for
 * the last one; false means "read its lines to know". The block's lines must hold no carriage
 * return (the caller checks the text once).
 */
export function isUneditedSpan(source: string, start: number, end: number): boolean {
  // The quoted insight: the block's first lines that start with '>', unquoted.
  let insight = "";
  let position = start;
  let first = true;
  while (position < end && source.charCodeAt(position) === 62) {
    let next = source.indexOf("\n", position);
    if (next === -1 || next > end) next = end;
    const text =
      source.charCodeAt(position + 1) === 32 && position + 1 < next
        ? source.slice(position + 2, next)
        : source.slice(position + 1, next);
    insight = first ? text : `${insight}\n${text}`;
    first = false;
    position = next + 1;
  }
  // The first data comment after the quote must be the block's last line that is not empty.
  // (Looked for in a slice of the block, so a block without one is not searched past its end.)
  if (position - 1 >= end) return false;
  const found = source.slice(position - 1, end).indexOf(DATA_LINE_START);
  if (found === -1) return false;
  const lineStart = position + found;
  let lineEnd = source.indexOf("\n", lineStart);
  if (lineEnd === -1) lineEnd = source.length;
  if (lineEnd > end) return false;
  for (let rest = lineEnd; rest < end; rest++) if (source.charCodeAt(rest) !== 10) return false;
  if (lineEnd - lineStart < DATA_PREFIX.length + 5 || !source.endsWith("} -->", lineEnd)) return false;
  // The payload's head, `{"v":1,"body":"<digest>","entry":{`, with the digest of the quote.
  const payload = lineStart + DATA_PREFIX.length - 1;
  return (
    payload + BODY_HEAD.length + 16 + BODY_TAIL.length <= lineEnd &&
    source.startsWith(BODY_HEAD, payload) &&
    source.startsWith(BODY_TAIL, payload + BODY_HEAD.length + 16) &&
    source.startsWith(digestOf(insight), payload + BODY_HEAD.length)
  );
}

const DATA_LINE_START = `\n${DATA_PREFIX}`;
const BODY_HEAD = '{"v":1,"body":"';
const BODY_TAIL = '","entry":{';

/** The learning types in gstack's order, used to order sections. */
export const TYPE_ORDER: readonly string[] = learningTypes;

import { applyEdits, type MarkdownBlock, parseMarkdownStructure, type TextEdit } from "./markdown-structure";

/** What {@link stripClaudePreamble} took out, for the run report. */
export interface StrippedPart {
  kind: "section" | "shell-lines" | "code-block" | "paragraph";
  /** First line of what was removed, trimmed. */
  summary: string;
}

/**
 * Headings of sections that only make sense inside gstack's Claude Code install, and the
 * behaviour patches gstack tunes for the Claude model family.
 */
const CLAUDE_ONLY_SECTION =
  /\b(telemetry|update[- ]check|upgrade[- ]check|session tracking)\b|\bmodel-specific\b.*\bclaude\b/i;

/** Shell lines that talk to gstack's Claude-side telemetry, updater or session counter. */
const CLAUDE_ONLY_SHELL = [
  /gstack-(update-check|telemetry-log|telemetry-sync|upgrade)\b/,
  /\.gstack\/(sessions|analytics)\b/,
  /gstack-config\s+(get|set)\s+(telemetry|update_check|auto_upgrade)\b/,
  // The model overlay is gstack's patch for Claude models, removed with its section.
  /\bMODEL_OVERLAY\b/,
];

/** Variables the preamble uses only for telemetry, upgrades and session counting. */
const CLAUDE_ONLY_VARIABLE = /^_?(TEL|TELEMETRY|UPD|UPGRADE|SESSIONS)(_[A-Z0-9]+)*$/;

/** Words whose presence marks a paragraph as instructions about the removed preamble parts. */
const FIXED_MARKERS = [
  "UPGRADE_AVAILABLE",
  "JUST_UPGRADED",
  "TEL_PROMPTED",
  "gstack-upgrade",
  "gstack-telemetry-log",
  "gstack-update-check",
];
const FIXED_MARKER = new RegExp(
  `(^|[^A-Za-z0-9_-])(?:${FIXED_MARKERS.map(escapeRegExp).join("|")})(?![A-Za-z0-9_-])`,
);

const SHELL_LANGS = new Set(["", "bash", "sh", "shell", "zsh", "console"]);
const ASSIGNMENT = /^\s*(?:export\s+|local\s+|readonly\s+)?([A-Za-z_][A-Za-z0-9_]*)=/;
const BLOCK_OPEN = /^\s*(if|for|while|until|case)\b/;
const BLOCK_CLOSE = /^\s*(fi|done|esac)\b/;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function lineStart(source: string, offset: number): number {
  return source.lastIndexOf("\n", offset - 1) + 1;
}

/** Extends a range to whole lines plus the blank lines after it. */
function wholeLines(source: string, start: number, end: number): { start: number; end: number } {
  let stop = source.indexOf("\n", end);
  stop = stop === -1 ? source.length : stop + 1;
  while (stop < source.length) {
    const next = source.indexOf("\n", stop);
    const line = source.slice(stop, next === -1 ? source.length : next);
    if (line.trim() !== "") break;
    stop = next === -1 ? source.length : next + 1;
  }
  return { start: lineStart(source, start), end: stop };
}

function firstLine(text: string): string {
  return (
    text
      .split("\n")
      .find((line) => line.trim() !== "")
      ?.trim() ?? ""
  );
}

interface ShellState {
  variables: Set<string>;
  labels: Set<string>;
}

/** Patterns of a variable's use (`$NAME`, `${NAME}`), by name. */
const variableUse = new Map<string, RegExp>();

function referencesTainted(line: string, variables: Set<string>): boolean {
  if (variables.size === 0 || !line.includes("$")) return false;
  for (const variable of variables) {
    if (!line.includes(variable)) continue;
    let pattern = variableUse.get(variable);
    if (pattern === undefined) {
      pattern = new RegExp(`\\$\\{?${escapeRegExp(variable)}\\b`);
      variableUse.set(variable, pattern);
    }
    if (pattern.test(line)) return true;
  }
  return false;
}

/** Returns the kept lines of a shell block, remembering what the removed lines defined. */
function filterShellLines(lines: string[], state: ShellState): { kept: string[]; removed: number } {
  const kept: string[] = [];
  let removed = 0;
  let index = 0;
  while (index < lines.length) {
    const line = lines[index] ?? "";
    const assigned = ASSIGNMENT.exec(line)?.[1];
    const claudeOnly =
      CLAUDE_ONLY_SHELL.some((pattern) => pattern.test(line)) ||
      (assigned !== undefined && CLAUDE_ONLY_VARIABLE.test(assigned)) ||
      referencesTainted(line, state.variables);
    if (!claudeOnly) {
      kept.push(line);
      index++;
      continue;
    }
    let stop = index + 1;
    const opens = BLOCK_OPEN.exec(line);
    if (opens && !/\b(fi|done|esac)\s*;?\s*(#.*)?$/.test(line)) {
      let depth = 1;
      while (stop < lines.length && depth > 0) {
        const inner = lines[stop] ?? "";
        if (BLOCK_OPEN.test(inner) && !/\b(fi|done|esac)\s*;?\s*$/.test(inner)) depth++;
        if (BLOCK_CLOSE.test(inner)) depth--;
        stop++;
      }
    }
    while (stop < lines.length && /\\\s*$/.test(lines[stop - 1] ?? "")) stop++;
    for (const removedLine of lines.slice(index, stop)) {
      const variable = ASSIGNMENT.exec(removedLine)?.[1];
      if (variable) state.variables.add(variable);
      for (const label of removedLine.matchAll(/echo\s+["']?([A-Z][A-Z0-9_]{2,}):/g)) {
        if (label[1]) state.labels.add(label[1]);
      }
    }
    // A comment right above removed lines described them; it goes too.
    while (kept.length > 0 && /^\s*#(?!!)/.test(kept[kept.length - 1] ?? "")) {
      kept.pop();
      removed++;
    }
    removed += stop - index;
    index = stop;
  }
  return { kept, removed };
}

/** Sentence boundaries inside one paragraph: after `.`, `!` or `?` and before a capital or code. */
const SENTENCE_BREAK = /(?<=[.!?])\s+(?=[A-Z`*"])/;

/**
 * The paragraph without the sentences that talk about removed parts, or undefined when
 * nothing of its own would remain (or what remains leans on what was removed).
 */
function keptSentences(text: string, hasMarker: (text: string) => boolean): string | undefined {
  const sentences = text.split(SENTENCE_BREAK);
  if (sentences.length < 2) return undefined;
  const kept = sentences.filter((sentence) => !hasMarker(sentence));
  if (kept.length === 0 || kept.length === sentences.length) return undefined;
  if (kept.some((sentence) => /^(?:Otherwise|Then|If not|Else|Also|This|That|It)\b/.test(sentence)))
    return undefined;
  return kept.join(" ");
}

/**
 * An introduction whose code block was removed, made to end without it: "name it and
 * log:" becomes "name it."; undefined when the whole sentence only introduced the block.
 */
function endIntroduction(text: string): string | undefined {
  const shortened = text.replace(/,?\s+(?:and|then)\s+(?:log|record|run|append|write)\b[^.:]*:\s*$/, ".");
  return shortened === text ? undefined : shortened;
}

/**
 * What remains of a removed telemetry section: gstack's timeline `completed` event, which
 * is local only and which gstack's other tools read, kept as a section of its own.
 */
function timelineSection(section: string, depth: number): string {
  const line = section
    .split("\n")
    .find((candidate) => /gstack-timeline-log\b/.test(candidate) && /"completed"/.test(candidate));
  if (line === undefined) return "";
  const command = line.trim().replace(/,"duration_s":"'"\$[A-Za-z_]+"'"/, "");
  return [
    `${"#".repeat(depth)} Timeline (run last)`,
    "",
    "When the workflow ends, record it in gstack's local timeline (never sent anywhere). Replace `SKILL_NAME` with the skill's name and `OUTCOME` with success, error, abort or unknown before running:",
    "",
    "```bash",
    command,
    "```",
    "",
    "",
  ].join("\n");
}

function inside(ranges: { start: number; end: number }[], block: MarkdownBlock): boolean {
  return ranges.some((range) => block.start >= range.start && block.end <= range.end);
}

/**
 * Removes the parts of gstack's preamble that belong to its Claude Code install:
 * telemetry, update checks and the session counter. Sections are dropped by heading, shell
 * lines by what they call (and every later line that uses a value they set), and
 * paragraphs or list items that give instructions about them. Everything else is kept.
 */
export function stripClaudePreamble(source: string): { body: string; stripped: StrippedPart[] } {
  // A condition that only waits for the removed telemetry prompt holds once it is gone.
  const body = source.replace(/ (?:AND|and) `TEL_PROMPTED` is `yes`/g, "");
  const { blocks } = parseMarkdownStructure(body);
  const edits: TextEdit[] = [];
  const removedRanges: { start: number; end: number }[] = [];
  const stripped: StrippedPart[] = [];

  blocks.forEach((block, index) => {
    if (block.type !== "heading" || inside(removedRanges, block)) return;
    const text = body.slice(block.start, block.end).replace(/^#+\s*/, "");
    if (!CLAUDE_ONLY_SECTION.test(text)) return;
    const next = blocks
      .slice(index + 1)
      .find((later) => later.type === "heading" && (later.depth ?? 6) <= (block.depth ?? 1));
    const range = {
      start: lineStart(body, block.start),
      end: next ? lineStart(body, next.start) : body.length,
    };
    removedRanges.push(range);
    edits.push({
      ...range,
      replacement: timelineSection(body.slice(range.start, range.end), block.depth ?? 2),
    });
    stripped.push({ kind: "section", summary: firstLine(body.slice(block.start, block.end)) });
  });

  const state: ShellState = { variables: new Set(), labels: new Set() };
  for (const block of blocks) {
    if (block.type !== "code" || inside(removedRanges, block)) continue;
    if (!SHELL_LANGS.has((block.lang ?? "").toLowerCase())) continue;
    const raw = body.slice(block.start, block.end);
    const lines = raw.split("\n");
    if (lines.length < 2 || !/^\s*(```|~~~)/.test(lines[0] ?? "")) continue;
    const closing = /^\s*(```|~~~)/.test(lines[lines.length - 1] ?? "") ? 1 : 0;
    const inner = lines.slice(1, lines.length - closing);
    const { kept, removed } = filterShellLines(inner, state);
    if (removed === 0) continue;
    if (kept.every((line) => line.trim() === "" || line.trim().startsWith("#"))) {
      const range = wholeLines(body, block.start, block.end);
      removedRanges.push(range);
      // A blank line keeps the text before and after apart; extra blank lines are collapsed later.
      const afterBlankLine = range.start === 0 || body.slice(0, range.start).endsWith("\n\n");
      edits.push({ ...range, replacement: afterBlankLine ? "" : "\n" });
      stripped.push({ kind: "code-block", summary: firstLine(inner.join("\n")) });
      const introduction = blocks[blocks.indexOf(block) - 1];
      if (introduction?.type === "paragraph" && !inside(removedRanges, introduction)) {
        const text = body.slice(introduction.start, introduction.end);
        if (/:\s*$/.test(text)) {
          const ended = endIntroduction(text);
          if (ended === undefined) {
            const whole = wholeLines(body, introduction.start, introduction.end);
            removedRanges.push(whole);
            edits.push({ ...whole, replacement: "" });
            stripped.push({ kind: "paragraph", summary: firstLine(text) });
          } else {
            removedRanges.push({ start: introduction.start, end: introduction.end });
            edits.push({ start: introduction.start, end: introduction.end, replacement: ended });
          }
        }
      }
    } else {
      const replacement = [lines[0], ...kept, ...(closing ? [lines[lines.length - 1]] : [])].join("\n");
      edits.push({ start: block.start, end: block.end, replacement });
      stripped.push({
        kind: "shell-lines",
        summary: `${removed} line(s) from ${firstLine(inner.join("\n"))}`,
      });
    }
  }

  // One pattern per kind of marker: a text matches one when it matches any of its names.
  const names = [...state.variables, ...state.labels];
  const markers = [
    FIXED_MARKER,
    /\btelemetry\b/i,
    ...(names.length === 0
      ? []
      : [new RegExp(`(^|[^A-Za-z0-9_])(?:${names.map(escapeRegExp).join("|")})(?![A-Za-z0-9_])`)]),
  ];
  const hasMarker = (text: string) => markers.some((marker) => marker.test(text));
  blocks.forEach((block, index) => {
    if (!["paragraph", "list-item", "blockquote"].includes(block.type) || inside(removedRanges, block))
      return;
    const text = body.slice(block.start, block.end);
    if (!hasMarker(text)) return;
    if (block.type === "paragraph" && !/:\s*$/.test(text)) {
      const kept = keptSentences(text, hasMarker);
      if (kept !== undefined) {
        removedRanges.push({ start: block.start, end: block.end });
        edits.push({ start: block.start, end: block.end, replacement: kept });
        stripped.push({ kind: "paragraph", summary: firstLine(text) });
        return;
      }
    }
    let end = block.end;
    if (block.type === "paragraph" && /:\s*$/.test(text)) {
      // A question flow: the introduction, what it asks, and up to its closing line that
      // names the same marker ("Skip if … is yes."), removed whole so nothing is left dangling.
      for (const later of blocks.slice(index + 1, index + 40)) {
        if (later.type === "heading") break;
        if (hasMarker(body.slice(later.start, later.end))) end = Math.max(end, later.end);
      }
      if (end === block.end) {
        const next = blocks[index + 1];
        if (next && next.type !== "heading" && next.type !== "paragraph") end = next.end;
      }
    }
    const range = wholeLines(body, block.start, end);
    // Edits already made inside a removed flow go with it.
    for (let at = edits.length - 1; at >= 0; at--) {
      const edit = edits[at];
      if (edit && edit.start >= range.start && edit.end <= range.end) edits.splice(at, 1);
    }
    removedRanges.push(range);
    edits.push({ ...range, replacement: "" });
    stripped.push({ kind: "paragraph", summary: firstLine(text) });
  });

  return { body: applyEdits(body, edits), stripped };
}

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

function referencesTainted(line: string, variables: Set<string>): boolean {
  for (const variable of variables) {
    if (new RegExp(`\\$\\{?${escapeRegExp(variable)}\\b`).test(line)) return true;
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
    removed += stop - index;
    index = stop;
  }
  return { kept, removed };
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
export function stripClaudePreamble(body: string): { body: string; stripped: StrippedPart[] } {
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
    edits.push({ ...range, replacement: "" });
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
      edits.push({ ...range, replacement: "" });
      stripped.push({ kind: "code-block", summary: firstLine(inner.join("\n")) });
    } else {
      const replacement = [lines[0], ...kept, ...(closing ? [lines[lines.length - 1]] : [])].join("\n");
      edits.push({ start: block.start, end: block.end, replacement });
      stripped.push({
        kind: "shell-lines",
        summary: `${removed} line(s) from ${firstLine(inner.join("\n"))}`,
      });
    }
  }

  const markers = [
    ...FIXED_MARKERS.map(
      (marker) => new RegExp(`(^|[^A-Za-z0-9_-])${escapeRegExp(marker)}(?![A-Za-z0-9_-])`),
    ),
    /\btelemetry\b/i,
    ...[...state.variables, ...state.labels].map(
      (name) => new RegExp(`(^|[^A-Za-z0-9_])${escapeRegExp(name)}(?![A-Za-z0-9_])`),
    ),
  ];
  for (const block of blocks) {
    if (!["paragraph", "list-item", "blockquote"].includes(block.type) || inside(removedRanges, block))
      continue;
    const text = body.slice(block.start, block.end);
    if (!markers.some((marker) => marker.test(text))) continue;
    const range = wholeLines(body, block.start, block.end);
    removedRanges.push(range);
    edits.push({ ...range, replacement: "" });
    stripped.push({ kind: "paragraph", summary: firstLine(text) });
  }

  return { body: applyEdits(body, edits), stripped };
}

import type { Nodes, Parents, Root } from "mdast";
import { fromMarkdown } from "mdast-util-from-markdown";

/** A node of the parsed Markdown with its offsets in the source. */
export interface MarkdownBlock {
  type: "heading" | "paragraph" | "list-item" | "code" | "blockquote" | "table" | "html" | "thematic-break";
  start: number;
  end: number;
  /** Heading depth, 1–6. */
  depth?: number;
  /** Info string of a fenced code block, e.g. `bash`. */
  lang?: string;
}

/** A part of the source that prose rules must not touch. */
export interface CodeSpan {
  kind: "fence" | "inline-code" | "html";
  start: number;
  end: number;
  /** For inline code: the text between the backticks. For a fence: its info string. */
  value: string;
}

/** The Markdown structure the transform works on. */
export interface MarkdownStructure {
  /** Blocks in document order, leaves first-class: list items are listed, lists are not. */
  blocks: MarkdownBlock[];
  /** Code and HTML spans in document order. */
  spans: CodeSpan[];
}

function offsets(node: Nodes): { start: number; end: number } | undefined {
  const start = node.position?.start.offset;
  const end = node.position?.end.offset;
  return start === undefined || end === undefined ? undefined : { start, end };
}

/**
 * Parses Markdown (CommonMark) and returns the offsets of its blocks and of every code or
 * HTML span, so that each kind of text can be rewritten by its own rules.
 */
export function parseMarkdownStructure(markdown: string): MarkdownStructure {
  const tree: Root = fromMarkdown(markdown);
  const blocks: MarkdownBlock[] = [];
  const spans: CodeSpan[] = [];

  const visit = (node: Nodes, inListItem: boolean): void => {
    const range = offsets(node);
    switch (node.type) {
      case "code":
        if (range) {
          spans.push({ kind: "fence", ...range, value: node.lang ?? "" });
          if (!inListItem) blocks.push({ type: "code", ...range, lang: node.lang ?? "" });
        }
        return;
      case "inlineCode":
        if (range) spans.push({ kind: "inline-code", ...range, value: node.value });
        return;
      case "html":
        if (range) {
          spans.push({ kind: "html", ...range, value: node.value });
          if (!inListItem) blocks.push({ type: "html", ...range });
        }
        return;
      case "heading":
        if (range) blocks.push({ type: "heading", ...range, depth: node.depth });
        break;
      case "paragraph":
        if (range && !inListItem) blocks.push({ type: "paragraph", ...range });
        break;
      case "listItem":
        if (range && !inListItem) blocks.push({ type: "list-item", ...range });
        for (const child of node.children) visit(child, true);
        return;
      case "blockquote":
        if (range && !inListItem) blocks.push({ type: "blockquote", ...range });
        for (const child of node.children) visit(child, true);
        return;
      case "thematicBreak":
        if (range && !inListItem) blocks.push({ type: "thematic-break", ...range });
        return;
      default:
        break;
    }
    if ("children" in node) {
      for (const child of (node as Parents).children) visit(child as Nodes, inListItem);
    }
  };
  visit(tree, false);
  spans.sort((left, right) => left.start - right.start);
  return { blocks, spans };
}

/** One replacement of `source.slice(start, end)`. */
export interface TextEdit {
  start: number;
  end: number;
  replacement: string;
}

/** Applies non-overlapping edits; an edit inside an earlier one is dropped. */
export function applyEdits(source: string, edits: readonly TextEdit[]): string {
  const sorted = [...edits].sort((left, right) => left.start - right.start || left.end - right.end);
  let output = "";
  let cursor = 0;
  for (const edit of sorted) {
    if (edit.start < cursor) continue;
    output += source.slice(cursor, edit.start) + edit.replacement;
    cursor = edit.end;
  }
  return output + source.slice(cursor);
}

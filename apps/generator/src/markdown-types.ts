/** The shapes shared by the Markdown scanner and the structure built on it. */

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

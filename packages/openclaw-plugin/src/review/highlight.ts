/**
 * Syntax highlighting of a diff's lines on the server: one line at a time (a hunk may start
 * inside anything, so no state is carried between lines), by one sticky regular expression per
 * language whose alternatives are the token kinds. The output is the line's text, escaped for
 * HTML content, with `<i class=…>` around the tokens (an element as short as HTML has: a 5,000-line
 * diff is a third smaller than with spans); nothing else is added, so the
 * highlighted HTML's text is exactly the line.
 */

/** The languages highlighted; a file of any other kind is shown plain. */
export type Language = "js" | "json" | "py" | "go" | "rust" | "sh" | "md" | "yaml" | "css" | "html";

/** Token kinds and the class each gets on the page (styled in render.ts). */
const KIND_CLASS = {
  comment: "c",
  string: "s",
  number: "n",
  keyword: "k",
  key: "y",
  tag: "t",
  heading: "m",
} as const;
type Kind = keyof typeof KIND_CLASS;

/** A line longer than this (minified code, data) is shown plain: fast, and no one reads its colours. */
export const MAX_HIGHLIGHT_CHARS = 1000;

const EXTENSIONS: Record<string, Language> = {
  ts: "js",
  tsx: "js",
  mts: "js",
  cts: "js",
  js: "js",
  jsx: "js",
  mjs: "js",
  cjs: "js",
  json: "json",
  jsonc: "json",
  json5: "json",
  py: "py",
  pyi: "py",
  go: "go",
  rs: "rust",
  sh: "sh",
  bash: "sh",
  zsh: "sh",
  md: "md",
  markdown: "md",
  yml: "yaml",
  yaml: "yaml",
  css: "css",
  scss: "css",
  less: "css",
  html: "html",
  htm: "html",
  xml: "html",
  svg: "html",
  vue: "html",
};

/** The language of a file by its name, or undefined for one shown plain. */
export function languageOf(path: string): Language | undefined {
  const name = path.slice(path.lastIndexOf("/") + 1).toLowerCase();
  if (name === ".bashrc" || name === ".profile" || name === ".zshrc") return "sh";
  const dot = name.lastIndexOf(".");
  return dot > 0 ? EXTENSIONS[name.slice(dot + 1)] : undefined;
}

const words = (text: string) => new Set(text.split(" "));

const KEYWORDS: Partial<Record<Language, Set<string>>> = {
  js: words(
    "as async await break case catch class const continue debugger default delete do else enum export extends false finally for from function get if implements import in instanceof interface let new null of private protected public readonly return satisfies set static super switch this throw true try type typeof undefined var void while with yield",
  ),
  py: words(
    "False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda match case nonlocal not or pass raise return try while with yield self",
  ),
  go: words(
    "break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var nil true false iota",
  ),
  rust: words(
    "as async await break const continue crate dyn else enum extern false fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait true type unsafe use where while",
  ),
  sh: words(
    "if then else elif fi case esac for while until do done in function return local export readonly set unset shift exit break continue source echo",
  ),
  json: words("true false null"),
  yaml: words("true false null yes no on off"),
};

const NUMBER = String.raw`\b(?:0[xX][\da-fA-F_]+|0[bB][01_]+|\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?)[a-zA-Z]*\b`;
const DOUBLE = String.raw`"(?:[^"\\]|\\.)*"?`;
const SINGLE = String.raw`'(?:[^'\\]|\\.)*'?`;
const BACKTICK = String.raw`\`(?:[^\`\\]|\\.)*\`?`;
const WORD = String.raw`[A-Za-z_$][\w$]*`;

/** Each language: the alternatives in order, each a token kind (or "word": a keyword when it is one). */
const RULES: Record<Language, [Kind | "word" | "plain", string][]> = {
  js: [
    ["comment", String.raw`\/\/.*|\/\*(?:[^*]|\*(?!\/))*(?:\*\/)?`],
    ["string", `${DOUBLE}|${SINGLE}|${BACKTICK}`],
    ["number", NUMBER],
    ["word", WORD],
  ],
  json: [
    ["comment", String.raw`\/\/.*`],
    ["key", `${DOUBLE}(?=\\s*:)`],
    ["string", DOUBLE],
    ["number", String.raw`-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?`],
    ["word", WORD],
  ],
  py: [
    ["comment", "#.*"],
    [
      "string",
      `[rRbBuUfF]{0,2}(?:"""(?:[^\\\\]|\\\\.)*?(?:"""|$)|'''(?:[^\\\\]|\\\\.)*?(?:'''|$)|${DOUBLE}|${SINGLE})`,
    ],
    ["number", NUMBER],
    ["tag", String.raw`@[\w.]+`],
    ["word", WORD],
  ],
  go: [
    ["comment", String.raw`\/\/.*|\/\*(?:[^*]|\*(?!\/))*(?:\*\/)?`],
    ["string", `${DOUBLE}|${BACKTICK}|'(?:[^'\\\\]|\\\\.)+'`],
    ["number", NUMBER],
    ["word", WORD],
  ],
  rust: [
    ["comment", String.raw`\/\/.*|\/\*(?:[^*]|\*(?!\/))*(?:\*\/)?`],
    ["string", `b?${DOUBLE}|b?'(?:[^'\\\\]|\\\\.[^']*)'`],
    ["tag", String.raw`#!?\[[^\]]*\]?`],
    ["number", NUMBER],
    ["word", String.raw`[A-Za-z_]\w*!?`],
  ],
  sh: [
    ["comment", String.raw`(?<![^\s;|&(])#.*`],
    ["string", `${DOUBLE}|'[^']*'?`],
    ["key", String.raw`\$(?:\{[^}]*\}?|[\w@*#?$!-])`],
    ["number", String.raw`\b\d+\b`],
    ["word", String.raw`[A-Za-z_][\w-]*`],
  ],
  md: [
    ["heading", String.raw`^#{1,6}(?:\s.*)?$`],
    ["comment", "^>.*"],
    ["string", "`[^`]*`?"],
    ["key", String.raw`^\s*(?:[-*+]|\d+[.)])(?=\s)`],
    ["tag", String.raw`\[[^\]]*\]\([^)]*\)?`],
  ],
  yaml: [
    ["comment", String.raw`(?<![^\s])#.*`],
    ["key", String.raw`(?:^\s*(?:-\s+)?|(?<=\{\s*|,\s*))[\w.\-/]+(?=\s*:(?:\s|$))`],
    ["string", `${DOUBLE}|'(?:[^']|'')*'?`],
    ["tag", String.raw`[&*][\w-]+|!\S+`],
    ["number", String.raw`(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])`],
    ["word", String.raw`[A-Za-z_][\w-]*`],
  ],
  css: [
    ["comment", String.raw`\/\*(?:[^*]|\*(?!\/))*(?:\*\/)?|\/\/.*`],
    ["string", `${DOUBLE}|${SINGLE}`],
    ["tag", String.raw`@[\w-]+|#[\da-fA-F]{3,8}\b`],
    ["key", String.raw`--?[A-Za-z][\w-]*(?=\s*:)|[A-Za-z][\w-]*(?=\s*:(?!:))`],
    ["number", String.raw`-?\d*\.?\d+(?:%|[a-zA-Z]+)?`],
  ],
  html: [
    ["comment", "<!--(?:[^-]|-(?!->))*(?:-->)?"],
    ["tag", String.raw`<\/?[A-Za-z][\w:.-]*|\/?>`],
    ["key", String.raw`[A-Za-z_:][\w:.-]*(?==)`],
    ["string", `${DOUBLE}|${SINGLE}`],
  ],
};

interface Compiled {
  pattern: RegExp;
  kinds: (Kind | "word" | "plain")[];
  keywords: Set<string> | undefined;
}

const compiled = new Map<Language, Compiled>();

function compile(language: Language): Compiled {
  let found = compiled.get(language);
  if (!found) {
    const rules = RULES[language];
    found = {
      pattern: new RegExp(rules.map(([, source]) => `(${source})`).join("|"), "gm"),
      kinds: rules.map(([kind]) => kind),
      keywords: KEYWORDS[language],
    };
    compiled.set(language, found);
  }
  return found;
}

/** Text made safe for HTML content: the same escaping as the page's plain lines. */
function escapeText(text: string): string {
  return text.replace(/[&<>]/g, (char) => (char === "&" ? "&amp;" : char === "<" ? "&lt;" : "&gt;"));
}

/** One line of code, escaped for HTML content, its tokens in `<i>` elements of their kind's class. */
export function highlightLine(line: string, language: Language | undefined): string {
  if (!language || line.length > MAX_HIGHLIGHT_CHARS) return escapeText(line);
  const { pattern, kinds, keywords } = compile(language);
  let out = "";
  let at = 0;
  pattern.lastIndex = 0;
  for (let match = pattern.exec(line); match; match = pattern.exec(line)) {
    const text = match[0];
    if (text === "") {
      pattern.lastIndex += 1;
      continue;
    }
    let group = 1;
    while (match[group] === undefined) group += 1;
    let kind = kinds[group - 1];
    if (kind === "word") kind = keywords?.has(text) ? "keyword" : "plain";
    if (kind === "plain" || kind === undefined) continue;
    out += `${escapeText(line.slice(at, match.index))}<i class=${KIND_CLASS[kind]}>${escapeText(text)}</i>`;
    at = match.index + text.length;
  }
  return out + escapeText(line.slice(at));
}

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { highlightLine, type Language, languageOf, MAX_HIGHLIGHT_CHARS } from "./highlight";
import { PAGE_STYLE } from "./render";

const LANGUAGES: Language[] = ["js", "json", "py", "go", "rust", "sh", "md", "yaml", "css", "html"];

/** The text a browser shows of highlighted HTML: its <i> elements dropped, the entities read. */
function textOf(html: string): string {
  expect(html).not.toMatch(/<(?!i class=[csnkytm]>|\/i>)/);
  const opened = html.match(/<i /g)?.length ?? 0;
  const closed = html.match(/<\/i>/g)?.length ?? 0;
  expect(opened).toBe(closed);
  return html
    .replace(/<i class=[csnkytm]>|<\/i>/g, "")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");
}

/** Text made of what code is made of, so the tokenizers' every branch is reached. */
const codeText = fc.oneof(
  fc.string({ unit: "grapheme-composite", maxLength: 120 }),
  fc
    .array(
      fc.constantFrom(
        ..."\"'`\\/*#<>&;:=!-_.,{}[]()@$%0123456789 \t\nabcxyzABC".split(""),
        "//",
        "/*",
        "*/",
        "<!--",
        "-->",
        '"""',
        "if",
        "fn",
        "def",
        "const",
        "0x1f",
        "1e-3",
        "&amp;",
        "&lt;",
        "</span>",
        "</i>",
        "<i class=k>",
        '<span class="tk">',
        "r#",
        "${",
        "'a",
        "é",
        "😀",
      ),
      { maxLength: 60 },
    )
    .map((parts) => parts.join("")),
);

describe("highlighting a line", () => {
  it("any text in any language comes back as the same text, with only the highlighter's elements as markup", () => {
    fc.assert(
      fc.property(fc.constantFrom(undefined, ...LANGUAGES), codeText, (language, text) => {
        expect(textOf(highlightLine(text, language))).toBe(text);
      }),
      { numRuns: 3000 },
    );
  });

  it("pinned: markup in the code is text, not markup", () => {
    const html = highlightLine(`const x = "</span><script>alert(1)</script>"; // <b>`, "js");
    expect(html).not.toContain("<script");
    expect(textOf(html)).toBe(`const x = "</span><script>alert(1)</script>"; // <b>`);
  });

  it("marks the kinds of token a reader looks for", () => {
    expect(highlightLine(`export const answer = "42"; // why`, "js")).toBe(
      `<i class=k>export</i> <i class=k>const</i> answer = <i class=s>"42"</i>; <i class=c>// why</i>`,
    );
    expect(highlightLine(`def f(x): return 0x1F  # hex`, "py")).toBe(
      `<i class=k>def</i> f(x): <i class=k>return</i> <i class=n>0x1F</i>  <i class=c># hex</i>`,
    );
    expect(highlightLine(`  "name": "widget", "n": 3`, "json")).toBe(
      `  <i class=y>"name"</i>: <i class=s>"widget"</i>, <i class=y>"n"</i>: <i class=n>3</i>`,
    );
    expect(highlightLine(`func main() { go run() }`, "go")).toContain(`<i class=k>func</i>`);
    expect(highlightLine(`let s: &'a str = 'x';`, "rust")).toContain(`<i class=s>'x'</i>`);
    expect(highlightLine(`echo "$HOME" # note`, "sh")).toBe(
      `<i class=k>echo</i> <i class=s>"$HOME"</i> <i class=c># note</i>`,
    );
    expect(highlightLine(`url: http://x#frag # note`, "yaml")).toBe(
      `<i class=y>url</i>: http://x#frag <i class=c># note</i>`,
    );
    expect(highlightLine("## Title with `code`", "md")).toBe(`<i class=m>## Title with \`code\`</i>`);
    expect(highlightLine("a { color: #fff; }", "css")).toContain(`<i class=y>color</i>`);
    expect(highlightLine(`<a href="x">y</a>`, "html")).toBe(
      `<i class=t>&lt;a</i> <i class=y>href</i>=<i class=s>"x"</i><i class=t>&gt;</i>y<i class=t>&lt;/a</i><i class=t>&gt;</i>`,
    );
  });

  it("a line too long to read is shown plain, and so is a file of an unknown kind", () => {
    const long = `const x = "${"a".repeat(MAX_HIGHLIGHT_CHARS)}";`;
    expect(highlightLine(long, "js")).toBe(long);
    expect(highlightLine("const x = 1;", languageOf("notes.txt"))).toBe("const x = 1;");
  });

  it("knows the common languages by their file names", () => {
    expect(
      [
        "a.ts",
        "b/c.tsx",
        "x.mjs",
        "p.json",
        "s.py",
        "m.go",
        "l.rs",
        "r.sh",
        "README.md",
        "ci.yml",
        "a.css",
        "i.html",
      ].map(languageOf),
    ).toEqual(["js", "js", "js", "json", "py", "go", "rust", "sh", "md", "yaml", "css", "html"]);
    expect(languageOf("Makefile")).toBeUndefined();
    expect(languageOf(".gitignore")).toBeUndefined();
  });
});

/** WCAG 2 relative luminance of #rrggbb. */
function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((at) => {
    const value = Number.parseInt(hex.slice(at, at + 2), 16) / 255;
    return value <= 0.03928 ? value / 12.92 : ((value + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

function contrast(a: string, b: string): number {
  const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (light + 0.05) / (dark + 0.05);
}

function variables(block: string): Record<string, string> {
  return Object.fromEntries(
    [...block.matchAll(/--([a-z]+):#([0-9a-f]{6}|[0-9a-f]{3})\b/g)].map((m) => {
      const hex = m[2] as string;
      return [m[1], `#${hex.length === 3 ? [...hex].map((digit) => digit + digit).join("") : hex}`];
    }),
  );
}

describe("the colours of highlighted code", () => {
  const light = variables(/:root\{[^}]*\}/.exec(PAGE_STYLE)?.[0] ?? "");
  const dark = variables(/prefers-color-scheme:dark\)\{:root\{[^}]*\}/.exec(PAGE_STYLE)?.[0] ?? "");

  it.each([
    ["light", light],
    ["dark", dark],
  ])("every token colour reads at 4.5:1 or more on every code background (%s)", (_scheme, colours) => {
    const tokens = ["tk", "ts", "tn", "tc", "ty", "tt", "th"];
    const backgrounds = ["bg", "card", "add", "del"];
    for (const token of tokens) {
      for (const background of backgrounds) {
        const fg = colours[token];
        const bg = colours[background];
        expect(fg && bg, `--${token} and --${background} defined`).toBeTruthy();
        expect(contrast(fg as string, bg as string), `--${token} on --${background}`).toBeGreaterThanOrEqual(
          4.5,
        );
      }
    }
  });
});

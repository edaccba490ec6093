import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseGitDiff } from "./diff";
import type { DispatchView } from "./dispatch-view";
import { escapeHtml, escapeText, MAX_FILE_LINES, renderDispatchPage } from "./render";

const run = promisify(execFile);

const forms = { action: "/gstack/review/d?c=x", csrf: "t", key: "k0000000", tail: "/t", nonce: "n" };

/** Entities back to text, as a browser reads an attribute or text node. */
function readEntities(html: string): string {
  return html.replace(/&#(\d+);/g, (_match, code) => String.fromCharCode(Number(code)));
}

describe("HTML escaping", () => {
  it("a diff line escapes to text without markup that reads back the same", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme-composite" }), (text) => {
        const escaped = escapeText(text);
        expect(escaped).not.toMatch(/[<>]/);
        expect(escaped.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&")).toBe(text);
      }),
    );
  });

  it("any text escapes to markup-free text that reads back the same", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme-composite" }), (text) => {
        const escaped = escapeHtml(text);
        expect(escaped).not.toMatch(/[<>"']/);
        expect(readEntities(escaped)).toBe(text);
      }),
    );
  });
});

const HOSTILE_NAMES = [
  `"><img src=x onerror=alert(1)>.txt`,
  "&amp;<script>alert(2)<\u2215script>.md",
  "tab\there & 'quote'.txt",
  "back\\slash.txt",
  "naïve-ünïcode-文件.txt",
];
const HOSTILE_LINE = `</span></pre><script>alert("diff")</script><!--`;

describe("a hostile diff from a real repository", () => {
  let repo: string;
  let diffText: string;
  beforeAll(async () => {
    repo = await mkdtemp(join(tmpdir(), "gstack-review-hostile-"));
    const git = (...args: string[]) => run("git", ["-C", repo, ...args]);
    await git("init", "-q", "-b", "main");
    await git("config", "user.name", "Someone");
    await git("config", "user.email", "someone@example.invalid");
    await writeFile(join(repo, "base.txt"), "base\n");
    await git("add", ".");
    await git("commit", "-q", "-m", "base");
    for (const name of HOSTILE_NAMES) await writeFile(join(repo, name), `${HOSTILE_LINE}\nplain\n`);
    await writeFile(join(repo, "image.bin"), Buffer.from([0, 1, 2, 0, 255, 0, 3]));
    await writeFile(
      join(repo, "long.txt"),
      `${Array.from({ length: MAX_FILE_LINES + 50 }, (_, i) => `line ${i}`).join("\n")}\n`,
    );
    await git("add", ".");
    await git("commit", "-q", "-m", "hostile");
    diffText = (
      await run("git", ["-C", repo, "-c", "core.quotePath=false", "diff", "--no-color", "HEAD~1..HEAD"], {
        maxBuffer: 1 << 24,
      })
    ).stdout;
  });
  afterAll(async () => {
    await rm(repo, { recursive: true, force: true });
  });

  it("names every file as it is on disk, notes the binary and counts the lines", () => {
    const files = parseGitDiff(diffText);
    expect(files.map((file) => file.path).sort()).toEqual([...HOSTILE_NAMES, "image.bin", "long.txt"].sort());
    const binary = files.find((file) => file.path === "image.bin");
    expect(binary).toMatchObject({ binary: true, status: "added" });
    const hostile = files.find((file) => file.path === HOSTILE_NAMES[0]);
    expect(hostile).toMatchObject({ added: 2, removed: 0, binary: false });
  });

  it("renders no markup of the diff's own: names and lines come back as text", () => {
    const view: DispatchView = {
      id: "dispatch-20261127T080000-0badc0de",
      project: "acme<widget>",
      task: `<script>alert("task")</script>`,
      timeline: [],
      branch: "gstack/x",
      base: "main",
      commits: [{ sha: "a".repeat(40), subject: "<b>subject</b>", author: "<i>me</i>", date: "" }],
      diff: parseGitDiff(diffText),
      tests: [],
    };
    const html = renderDispatchPage(view, forms);
    // The only tags are the page's own: no script at all on a finished page, no img, no comment.
    expect(html).not.toMatch(/<script|<img|<!--|<b>|<i>/);
    for (const name of HOSTILE_NAMES) expect(html).toContain(escapeHtml(name));
    expect(html).toContain(escapeText(`+${HOSTILE_LINE}`));
    expect(html).toContain("A binary file: not shown.");
    // 2,050 added lines and the hunk header: 2,000 shown, 51 named.
    expect(html).toContain("51 more lines of this file are not shown here.");
    // The long file is collapsed; the short ones are open.
    expect(html).toMatch(/<details><summary><code>long\.txt<\/code>/);
  });
});

describe("what gstack reported", () => {
  it("its result, findings and tasks are shown as text", () => {
    const view: DispatchView = {
      id: "dispatch-20261127T080000-0badc0de",
      project: "acme",
      timeline: [],
      commits: [],
      diff: [],
      tests: [],
      completion: {
        dispatch_id: "dispatch-20261127T080000-0badc0de",
        status: "completed",
        duration: 10,
        gstack_run: {
          skill: "review",
          status: "complete",
          run_dir: ".gstack/runs/r1",
          check: "valid",
          findings: [{ id: "f1", severity: "high", title: "<img src=x onerror=alert(1)> unescaped query" }],
          tasks: [{ id: "t1", title: "Escape the query", status: "done", acceptance: "npm test passes" }],
        },
      } as unknown as DispatchView["completion"],
    };
    const html = renderDispatchPage(view, forms);
    expect(html).not.toContain("<img");
    expect(html).toContain("&#60;img src=x onerror=alert(1)&#62; unescaped query");
    expect(html).toContain("Escape the query: <strong>done</strong>");
    expect(html).toContain("npm test passes");
  });
});

import { gstackLayout, isoWeekOf, openClawLayout } from "@gstack/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  codeBullets,
  codeSpans,
  commandUse,
  fencedBlocks,
  helpFlags,
  helpSubcommands,
  markdownSection,
  namedPaths,
  shellWords,
  shownCommands,
  tableRows,
  unknownPaths,
} from "./skill-text.test-support";

// The drift checks of skill.test.ts are only as good as these readers: a reader that found
// nothing would let every check pass. These tests pin what they find and what they refuse.

describe("fencedBlocks", () => {
  it("returns info words, body and opening line, and honours longer fences", () => {
    const text = [
      "intro",
      "```json dispatch",
      "{}",
      "```",
      "",
      "````markdown",
      "```",
      "inner",
      "```",
      "````",
    ].join("\n");
    expect(fencedBlocks(text)).toEqual([
      { info: ["json", "dispatch"], body: "{}", line: 2 },
      { info: ["markdown"], body: "```\ninner\n```", line: 6 },
    ]);
  });

  it("refuses a fence that is never closed", () => {
    expect(() => fencedBlocks("```sh\ngstack-activity ship")).toThrow(/line 1/);
  });
});

describe("shownCommands", () => {
  it("finds commands in shell blocks and inline code, not in other blocks or bare program names", () => {
    const content = [
      "Run `gstack-activity ship --weeks 2` now; the `gstack-dispatch` program must exist.",
      "```sh",
      "$ gstack-handoff list --pending",
      "echo not ours",
      "```",
      "```json",
      '"gstack-routing resolve --nope"',
      "```",
    ].join("\n");
    expect(shownCommands({ file: "x.md", content })).toEqual([
      { text: "gstack-activity ship --weeks 2", file: "x.md", line: 1 },
      { text: "gstack-handoff list --pending", file: "x.md", line: 3 },
    ]);
  });
});

describe("commandUse and shellWords", () => {
  it("reads program, subcommand and long options, keeping quoted words whole", () => {
    expect(commandUse('gstack-learnings search "vitest --not-a-flag" --project=acme --json')).toEqual({
      program: "gstack-learnings",
      subcommand: "search",
      flags: ["--project", "--json"],
    });
  });

  it("splits any list of plain words back into the same words", () => {
    const word = fc.stringMatching(/^[A-Za-z0-9_./:=-]{1,12}$/);
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 8 }), (words) => {
        expect(shellWords(words.join("  "))).toEqual(words);
        expect(shellWords(words.map((item) => `"${item} x"`).join(" "))).toEqual(
          words.map((item) => `${item} x`),
        );
      }),
    );
  });
});

describe("help readers", () => {
  const help = [
    "\u001b[90mDo things (gstack-x v0.1.0)\u001b[39m",
    "",
    "\u001b[4m\u001b[1mUSAGE\u001b[22m\u001b[24m \u001b[36mgstack-x write|list|import-timeline\u001b[39m",
    "",
    "OPTIONS",
    "  --root=<root>    state root",
    "  --dry-run    Show what would be added (--no-checkpoints to leave them out)",
  ].join("\n");

  it("reads subcommands from the USAGE line, colours or not", () => {
    expect(helpSubcommands(help)).toEqual(["write", "list", "import-timeline"]);
  });

  it("reads every long option under OPTIONS", () => {
    expect(helpFlags(help)).toEqual(["--root", "--dry-run", "--no-checkpoints"]);
  });
});

describe("namedPaths and unknownPaths", () => {
  it("finds paths and drops trailing punctuation", () => {
    expect(namedPaths("See ~/.gstack/config.yaml. Then `~/.openclaw/workspace/memory/x.md`: done")).toEqual([
      "~/.gstack/config.yaml",
      "~/.openclaw/workspace/memory/x.md",
    ]);
  });

  it("refuses paths the layout does not have, such as the design's single activity file", () => {
    expect(
      unknownPaths([
        "~/.gstack/activity.jsonl",
        "~/.gstack/dispatch/completed/{id}.txt",
        "~/.gstack/dispatch/heartbeat.json",
        "~/.gstack/dispatch/completed/notes.md",
        "~/.openclaw/workspace/TOOLS.md",
        "~/.gstack/projects/{slug}/learnings.json",
      ]),
    ).toHaveLength(6);
  });

  it("accepts every path the layouts build, for any safe name and any week", () => {
    const name = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_-]{0,20}$/);
    const day = fc.date({
      min: new Date("2000-01-01T00:00:00Z"),
      max: new Date("2099-12-31T00:00:00Z"),
      noInvalidDate: true,
    });
    fc.assert(
      fc.property(name, day, (id, date) => {
        const gstack = gstackLayout("~/.gstack");
        const openclaw = openClawLayout("~/.openclaw/workspace");
        const dispatchId = `dispatch-${id}`;
        const paths = [
          `${gstack.dispatch.incoming}/${dispatchId}.json`,
          gstack.dispatch.completedReport(dispatchId),
          gstack.dispatch.completedJson(dispatchId),
          gstack.dispatch.claimedFile(dispatchId),
          `${gstack.dispatch.sessionDir(dispatchId)}/state.json`,
          gstack.handoff.file(id),
          gstack.project(id).learnings,
          gstack.project(id).timeline,
          `${gstack.project(id).checkpoints}/20260403-143000-auth.md`,
          gstack.activity.week(isoWeekOf(date)),
          openclaw.gstackMemory(id),
          openclaw.skill(id),
        ];
        expect(unknownPaths(paths)).toEqual([]);
      }),
    );
  });
});

describe("markdownSection", () => {
  const text = ["# Title", "## One", "a", "### Deeper", "b", "## Two", "c"].join("\n");

  it("returns a level-two section with its subsections, up to the next level-two heading", () => {
    expect(markdownSection(text, "One")).toBe("a\n### Deeper\nb");
    expect(markdownSection(text, "Two")).toBe("c");
  });

  it("refuses a heading the text does not have", () => {
    expect(() => markdownSection(text, "Three")).toThrow(/## Three/);
  });
});

describe("codeBullets", () => {
  it("reads bullets that open with backticked codes and a colon, one or several", () => {
    const text = [
      "- `queue_full`, `daemon_stopping`: wait, then send it again.",
      "- `duplicate`: do not resend.",
      "- Resubmitting `duplicate` ids is safe.",
      "* `not_found`: another bullet mark",
      "  - `nested`: indented",
    ].join("\n");
    expect(codeBullets(text)).toEqual([
      { codes: ["queue_full", "daemon_stopping"], text: "wait, then send it again." },
      { codes: ["duplicate"], text: "do not resend." },
    ]);
  });
});

describe("tableRows and codeSpans", () => {
  it("returns body rows of each table without header and rule rows", () => {
    const text = [
      "| Action | Route |",
      "| --- | :---: |",
      "| `spawn-session` | `POST /v1/sessions` |",
      "",
      "| A |",
      "| - |",
      "| b |",
    ].join("\n");
    expect(tableRows(text)).toEqual([["`spawn-session`", "`POST /v1/sessions`"], ["b"]]);
  });

  it("returns every backticked span in order", () => {
    expect(codeSpans("`a`, `b c` and `d`")).toEqual(["a", "b c", "d"]);
  });
});

import { parseMarkdownStructure } from "./markdown-structure";

/** A short note for the agent about how an instruction works on OpenClaw. */
export interface OpenClawNote {
  id: "spawn-depth" | "planning-only" | "browse-binary" | "design-binary";
  /** Text that marks the first place the note is relevant. */
  trigger: RegExp;
  text: string;
}

export const openClawNotes: readonly OpenClawNote[] = [
  {
    id: "browse-binary",
    trigger: /\$\{?B\b/,
    text:
      "> **Browser commands on OpenClaw:** `$B` is gstack's own browse binary, not OpenClaw's browser tool. " +
      "Run each `$B …` command with the exec tool, in the shell where `B` was set. The binary is looked up " +
      "beside the gstack skill and then as `browse` on the PATH; if neither exists, tell the user to install " +
      "gstack's browse tool and stop.",
  },
  {
    id: "design-binary",
    trigger: /\$\{?D\b(?![-.\w])/,
    text:
      "> **Design commands on OpenClaw:** `$D` is gstack's own design binary (`design/dist/design` in the " +
      "gstack pack's folder), not an OpenClaw tool. Run each `$D …` command with the exec tool, in the shell " +
      "where `D` was set; if the binary is missing, tell the user that gstack's design tool is not " +
      "installed and continue without it.",
  },
  {
    id: "spawn-depth",
    trigger: /sessions_spawn/,
    text:
      "> **Sub-agents on OpenClaw:** `sessions_spawn` runs each sub-agent in a session of its own that does " +
      "not share this session's context, so hand it everything it needs in the task text. Nesting is capped " +
      "by `agents.defaults.subagents.maxSpawnDepth` (1–5, default 1): with the default, a sub-agent cannot " +
      "start sub-agents of its own. If a spawn is refused, do that part of the work in this session.",
  },
  {
    id: "planning-only",
    trigger: /planning-only mode/i,
    text:
      "> **Planning-only mode:** OpenClaw has no built-in mode that blocks changes. When the user wants a plan, change " +
      "nothing: no edits, commits or pushes. Write the plan in your chat reply and wait until the user " +
      "approves it before acting on it.",
  },
];

/**
 * Inserts each relevant note once, right after the first top-level block that needs it,
 * and returns which notes were added.
 */
export function insertOpenClawNotes(body: string): { body: string; added: OpenClawNote["id"][] } {
  if (!openClawNotes.some((note) => note.trigger.test(body))) return { body, added: [] };
  const { blocks } = parseMarkdownStructure(body);
  const insertions: { at: number; text: string; id: OpenClawNote["id"] }[] = [];
  for (const note of openClawNotes) {
    const block = blocks.find(
      (candidate) =>
        candidate.type !== "heading" && note.trigger.test(body.slice(candidate.start, candidate.end)),
    );
    if (!block) continue;
    const lineEnd = body.indexOf("\n", block.end);
    insertions.push({ at: lineEnd === -1 ? body.length : lineEnd + 1, text: note.text, id: note.id });
  }
  insertions.sort((left, right) => left.at - right.at);
  let output = "";
  let cursor = 0;
  for (const insertion of insertions) {
    const before = body.slice(cursor, insertion.at);
    output += `${before}${before.endsWith("\n") ? "" : "\n"}\n${insertion.text}\n`;
    cursor = insertion.at;
  }
  output += body.slice(cursor);
  return { body: output, added: insertions.map((insertion) => insertion.id) };
}

/** Collapses runs of blank lines outside fenced code and trims trailing spaces on prose lines. */
export function normaliseBlankLines(body: string): string {
  const lines = body.split("\n");
  const output: string[] = [];
  let fence: string | undefined;
  let blankRun = 0;
  for (const line of lines) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === undefined && marker) {
      fence = marker;
    } else if (fence !== undefined && marker && marker[0] === fence[0] && marker.length >= fence.length) {
      fence = undefined;
      output.push(line);
      blankRun = 0;
      continue;
    }
    if (fence === undefined && line.trim() === "") {
      blankRun++;
      if (blankRun > 1) continue;
      output.push("");
      continue;
    }
    blankRun = 0;
    output.push(line);
  }
  while (output.length > 0 && output[0] === "") output.shift();
  while (output.length > 0 && output[output.length - 1] === "") output.pop();
  return `${output.join("\n")}\n`;
}

import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { gstackLayout, openClawLayout } from "@gstack/contracts";

/** One Markdown file of the skill, with its path relative to the skill folder. */
export interface SkillFile {
  file: string;
  content: string;
}

/** Every Markdown file of a skill folder (SKILL.md and references), sorted by path. */
export async function readSkillFiles(folder: string): Promise<SkillFile[]> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  const files = entries
    .filter((entry) => entry.isFile() && entry.name.endsWith(".md"))
    .map((entry) => relative(folder, join(entry.parentPath, entry.name)).split("\\").join("/"))
    .sort();
  return Promise.all(
    files.map(async (file) => ({ file, content: await readFile(join(folder, file), "utf8") })),
  );
}

/** A fenced code block: its info string split into words, its body and the line it opens on. */
export interface FencedBlock {
  info: string[];
  body: string;
  line: number;
}

/** The fenced code blocks of a Markdown text (backtick fences, closed by a fence at least as long). */
export function fencedBlocks(markdown: string): FencedBlock[] {
  const blocks: FencedBlock[] = [];
  const lines = markdown.split("\n");
  let open: { fence: string; info: string[]; line: number; body: string[] } | undefined;
  lines.forEach((text, index) => {
    const fence = /^ {0,3}(`{3,})(.*)$/.exec(text);
    if (open) {
      if (fence && fence[1]!.length >= open.fence.length && fence[2]!.trim() === "") {
        blocks.push({ info: open.info, body: open.body.join("\n"), line: open.line });
        open = undefined;
      } else {
        open.body.push(text);
      }
    } else if (fence) {
      open = {
        fence: fence[1]!,
        info: fence[2]!.trim().split(/\s+/).filter(Boolean),
        line: index + 1,
        body: [],
      };
    }
  });
  if (open) throw new Error(`code fence opened on line ${open.line} is never closed`);
  return blocks;
}

/** A command line shown in the skill, with where it is. */
export interface ShownCommand {
  text: string;
  file: string;
  line: number;
}

const SHELL_LANGUAGES = new Set(["sh", "bash", "shell", "console"]);

/**
 * Every `gstack-…` command the text shows: lines of shell code blocks and inline code spans
 * outside code blocks that start with a `gstack-` program name.
 */
export function shownCommands(file: SkillFile): ShownCommand[] {
  const commands: ShownCommand[] = [];
  const lines = file.content.split("\n");
  let fence: { marker: string; shell: boolean } | undefined;
  lines.forEach((text, index) => {
    const line = index + 1;
    const fenceMatch = /^ {0,3}(`{3,})(.*)$/.exec(text);
    if (fence) {
      if (fenceMatch && fenceMatch[1]!.length >= fence.marker.length && fenceMatch[2]!.trim() === "")
        fence = undefined;
      else if (fence.shell && /^\s*(?:\$\s+)?gstack-/.test(text))
        commands.push({ text: text.trim().replace(/^\$\s+/, ""), file: file.file, line });
      return;
    }
    if (fenceMatch) {
      const language = fenceMatch[2]!.trim().split(/\s+/)[0] ?? "";
      fence = { marker: fenceMatch[1]!, shell: SHELL_LANGUAGES.has(language) };
      return;
    }
    for (const span of text.matchAll(/`([^`]+)`/g)) {
      if (/^gstack-[a-z]+\s+\S/.test(span[1]!))
        commands.push({ text: span[1]!.trim(), file: file.file, line });
    }
  });
  return commands;
}

/** Splits a command line into words, honouring single and double quotes. */
export function shellWords(command: string): string[] {
  const words: string[] = [];
  for (const match of command.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)) {
    words.push(match[1] ?? match[2] ?? match[3]!);
  }
  return words;
}

/** A command split into program, subcommand and the long options it uses. */
export interface CommandUse {
  program: string;
  subcommand: string | undefined;
  flags: string[];
}

/** Reads program, subcommand (the first word that is no option) and `--flags` of a command. */
export function commandUse(command: string): CommandUse {
  const [program = "", ...rest] = shellWords(command);
  const subcommand = rest.find((word) => !word.startsWith("-"));
  const flags = rest.filter((word) => word.startsWith("--")).map((word) => word.split("=")[0]!);
  return { program, subcommand, flags };
}

/** Removes terminal colour codes. */
export function plainText(text: string): string {
  return text.replace(/\u001b\[[0-9;]*m/g, "");
}

/** The subcommands a citty `--help` lists in its USAGE line (`prog a|b|c`). */
export function helpSubcommands(help: string): string[] {
  const usage = /USAGE\s+\S+\s+([a-z0-9|-]+)/.exec(plainText(help));
  return usage ? usage[1]!.split("|") : [];
}

/** The long options a citty `--help` lists under OPTIONS. */
export function helpFlags(help: string): string[] {
  const text = plainText(help);
  const options = text.slice(text.indexOf("OPTIONS"));
  return [...new Set([...options.matchAll(/(--[a-z0-9][a-z0-9-]*)/g)].map((match) => match[1]!))];
}

/** Every path under `~/.gstack` or `~/.openclaw/workspace` the text names, trailing punctuation removed. */
export function namedPaths(markdown: string): string[] {
  const found = markdown.matchAll(/~\/\.(?:gstack|openclaw\/workspace)(?:\/[^\s`'"()<>,;]*)?/g);
  return [...found].map((match) => match[0].replace(/[.:]+$/, ""));
}

const SENTINEL = "PLACEHOLDERNAME";
const DISPATCH_SENTINEL = "PLACEHOLDERDISPATCH";
const WEEK = "2026-W01";
const DISPATCH_PATTERN = String.raw`(?:\{id\}|dispatch-[A-Za-z0-9_-]+)`;
const NAME_PATTERN = String.raw`(?:\{[a-z_]+\}|[A-Za-z0-9][A-Za-z0-9._-]*)`;
const WEEK_PATTERN = "(?:YYYY-Www|[0-9]{4}-W[0-9]{2})";

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function patternOf(path: string): string {
  return escapeRegex(path)
    .replaceAll(DISPATCH_SENTINEL, DISPATCH_PATTERN)
    .replaceAll(SENTINEL, NAME_PATTERN)
    .replaceAll(WEEK, WEEK_PATTERN);
}

/**
 * Checks the paths a skill names against the contracts layouts (gstack state root at
 * `~/.gstack`, OpenClaw workspace at `~/.openclaw/workspace`). `{id}`-style placeholders
 * and concrete names stand for file-name parts (a dispatch file needs `{id}` or a
 * `dispatch-…` id); `YYYY-Www` for an ISO week. A path is known
 * when it is a file or folder of a layout, or lies inside a folder whose contents are free
 * (the dispatch temporary folder, a session folder, rejected dispatches, OpenClaw memory and
 * skills). Returns the unknown paths.
 */
export function unknownPaths(paths: readonly string[]): string[] {
  const gstack = gstackLayout("~/.gstack");
  const openclaw = openClawLayout("~/.openclaw/workspace");
  const project = gstack.project(SENTINEL);
  const exact = [
    gstack.root,
    gstack.config,
    gstack.routing,
    gstack.restrictions,
    gstack.standingTasks,
    gstack.clawvisorToken,
    gstack.dispatchSecret,
    gstack.apiToken,
    gstack.dispatch.incoming,
    join(gstack.dispatch.incoming, `${DISPATCH_SENTINEL}.json`),
    gstack.dispatch.tmp,
    gstack.dispatch.claimed,
    gstack.dispatch.claimedFile(DISPATCH_SENTINEL),
    gstack.dispatch.sessions,
    gstack.dispatch.sessionDir(DISPATCH_SENTINEL),
    gstack.dispatch.completed,
    gstack.dispatch.completedReport(DISPATCH_SENTINEL),
    gstack.dispatch.completedJson(DISPATCH_SENTINEL),
    gstack.dispatch.rejected,
    gstack.dispatch.queue,
    gstack.dispatch.audit,
    gstack.dispatch.heartbeat,
    gstack.dispatch.control,
    gstack.dispatch.apiSocket,
    gstack.activity.dir,
    gstack.activity.week(WEEK),
    gstack.handoff.dir,
    gstack.handoff.file(SENTINEL),
    gstack.projects,
    project.dir,
    project.learnings,
    project.timeline,
    project.checkpoints,
    openclaw.workspace,
    openclaw.agents,
    openclaw.soul,
    openclaw.identity,
    openclaw.user,
    openclaw.memoryIndex,
    openclaw.memoryDir,
    openclaw.gstackMemory(SENTINEL),
    openclaw.skills,
  ];
  const open = [
    gstack.dispatch.tmp,
    gstack.dispatch.sessionDir(DISPATCH_SENTINEL),
    gstack.dispatch.rejected,
    project.checkpoints,
    openclaw.memoryDir,
    openclaw.skills,
  ];
  const known = new RegExp(
    `^(?:${[...exact.map((path) => `${patternOf(path)}/?`), ...open.map((path) => `${patternOf(path)}/.+`)].join("|")})$`,
  );
  return paths.filter((path) => !known.test(path));
}

/**
 * The body of the `## heading` section of a Markdown text, up to the next heading of level two
 * or less; throws when the heading is missing, so a renamed section fails loudly.
 */
export function markdownSection(markdown: string, heading: string): string {
  const lines = markdown.split("\n");
  const start = lines.findIndex((line) => line.trim() === `## ${heading}`);
  if (start === -1) throw new Error(`no section "## ${heading}"`);
  const end = lines.findIndex((line, index) => index > start && /^#{1,2} /.test(line));
  return lines.slice(start + 1, end === -1 ? undefined : end).join("\n");
}

/** A bullet that opens with one or more code names and says what they mean: `- \`a\`, \`b\`: text`. */
export interface CodeBullet {
  codes: string[];
  text: string;
}

/**
 * Every bullet of a text that opens with backticked names joined by commas and then a colon,
 * such as the error lines of the skill. Bullets that open otherwise are left out.
 */
export function codeBullets(markdown: string): CodeBullet[] {
  const bullets: CodeBullet[] = [];
  for (const match of markdown.matchAll(/^- ((?:`[a-z_]+`(?:, )?)+): (.+)$/gm)) {
    const codes = [...match[1]!.matchAll(/`([a-z_]+)`/g)].map((code) => code[1]!);
    bullets.push({ codes, text: match[2]!.trim() });
  }
  return bullets;
}

/** The rows of every pipe table in a Markdown text, cells trimmed, header and rule rows left out. */
export function tableRows(markdown: string): string[][] {
  const rows: string[][] = [];
  let inTable = false;
  for (const line of markdown.split("\n")) {
    if (!line.trimStart().startsWith("|")) {
      inTable = false;
      continue;
    }
    const cells = line
      .trim()
      .replace(/^\||\|$/g, "")
      .split("|")
      .map((cell) => cell.trim());
    if (!inTable) {
      inTable = true; // the header row
      continue;
    }
    if (cells.every((cell) => /^:?-+:?$/.test(cell))) continue;
    rows.push(cells);
  }
  return rows;
}

/** The backticked names in a piece of Markdown, in order. */
export function codeSpans(markdown: string): string[] {
  return [...markdown.matchAll(/`([^`]+)`/g)].map((match) => match[1]!);
}

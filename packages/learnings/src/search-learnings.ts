import { readdir, readFile, stat } from "node:fs/promises";
import {
  gstackLayout,
  type LearningType,
  resolveGstackHome,
  resolveOpenClawWorkspace,
} from "@gstack/contracts";
import { contentFingerprint } from "./content-fingerprint";
import { screenLearning, screenText } from "./injection-screen";
import type { LocatedLearning, ReadWarning } from "./learning-entry";
import { splitMarkdownBlocks } from "./markdown-blocks";
import { parseMemoryFile } from "./memory-file";
import { parseLearningTitle } from "./memory-section";
import { entryFromAuthored, targetProjectOf } from "./plan-import";
import { countsAcrossProjects, effectiveConfidence, latestPerIdentity } from "./reading-rules";
import { compareRank, matchCount, queryTokens } from "./search-ranking";
import { listMemoryFiles, readLearningsFile } from "./workspace-files";

/** What to search for. */
export interface SearchOptions {
  /** gstack's state root (default: `resolveGstackHome()` from @gstack/contracts). */
  root?: string;
  /** The OpenClaw workspace (default: `resolveOpenClawWorkspace()`); `null` searches gstack only. */
  workspace?: string | null;
  /** The current gstack project. */
  project: string;
  /** Words to look for (any of them matches); empty lists everything, best first. */
  query?: string;
  /** Only learnings of this type (plain memory text has no type and is then left out). */
  type?: LearningType;
  /** At most this many learnings (default 10). */
  limit?: number;
  /** Also search other projects' learnings; only trusted ones count (default false). */
  crossProject?: boolean;
  /**
   * At most this many matches from OpenClaw's other memory (notes, chats, calendars), shown
   * after the learnings so they cannot crowd them out (default 3; 0 turns them off). Only
   * searched when there is a query.
   */
  memoryLimit?: number;
  /** The clock used for confidence decay. */
  now?: Date;
}

/** One search hit and where it came from. */
export interface SearchResult {
  /** `gstack` for learnings.jsonl, `openclaw` for the OpenClaw workspace. */
  side: "gstack" | "openclaw";
  /** `learning` for a learning, `memory` for other OpenClaw memory text. */
  kind: "learning" | "memory";
  /** The file it was read from (absolute). */
  file: string;
  /** The 1-based line it starts on. */
  line: number;
  /** The project a learning belongs to (for OpenClaw learnings, the one it names). */
  project: string | undefined;
  type: LearningType | undefined;
  key: string | undefined;
  /** The insight, or the matching memory paragraph (shortened). */
  text: string;
  /** Decayed confidence for learnings; OpenClaw's importance (or 0) for memory text. */
  confidence: number;
  ts: string | undefined;
  /** True for a learning from another gstack project. */
  crossProject: boolean;
  /** How many query tokens matched. */
  score: number;
  files: string[] | undefined;
}

/** Search results, plus what was left out and why. */
export interface SearchOutcome {
  results: SearchResult[];
  /** Entries that matched but were withheld because they look like prompt injection. */
  withheld: { file: string; line: number; rules: string[] }[];
  warnings: ReadWarning[];
}

type Candidate = SearchResult & { time: number };

function fromLearning(
  item: LocatedLearning,
  side: SearchResult["side"],
  project: string | undefined,
  crossProject: boolean,
  score: number,
  now: Date,
): Candidate {
  const { entry } = item;
  return {
    side,
    kind: "learning",
    file: item.file,
    line: item.line,
    project,
    type: entry.type,
    key: entry.key,
    text: entry.insight,
    confidence: effectiveConfidence(entry, now),
    ts: typeof entry.ts === "string" ? entry.ts : undefined,
    crossProject,
    score,
    files: Array.isArray(entry.files) ? entry.files : undefined,
    time: typeof entry.ts === "string" ? Date.parse(entry.ts) : Number.NaN,
  };
}

function shorten(text: string, limit = 400): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > limit ? `${flat.slice(0, limit - 1)}…` : flat;
}

/**
 * Searches gstack's learnings and OpenClaw's memory at once, with gstack's reading rules
 * (latest per `key|type`, confidence decay, trusted-only across projects). Read-only.
 * Each result names its side, file and line. Learnings come first (ranked by matched
 * tokens, then confidence, then recency), then a few matching paragraphs of other
 * OpenClaw memory. Anything that looks like prompt injection is withheld and reported.
 */
export async function searchLearnings(options: SearchOptions): Promise<SearchOutcome> {
  const now = options.now ?? new Date();
  const tokens = queryTokens(options.query ?? "");
  const limit = options.limit ?? 10;
  const memoryLimit = tokens.length === 0 || options.type !== undefined ? 0 : (options.memoryLimit ?? 3);
  const outcome: SearchOutcome = { results: [], withheld: [], warnings: [] };
  const candidates: Candidate[] = [];
  const layout = gstackLayout(options.root ?? resolveGstackHome(process.env));
  const workspace =
    options.workspace === undefined ? resolveOpenClawWorkspace(process.env) : options.workspace;

  const consider = (
    item: LocatedLearning,
    side: SearchResult["side"],
    project: string | undefined,
    cross: boolean,
  ) => {
    const { entry } = item;
    if (options.type !== undefined && entry.type !== options.type) return;
    const texts = [entry.key, entry.insight, ...(Array.isArray(entry.files) ? entry.files : [])];
    const score = matchCount(tokens, texts);
    if (tokens.length > 0 && score === 0) return;
    const findings = screenLearning(entry);
    if (findings.length > 0) {
      outcome.withheld.push({
        file: item.file,
        line: item.line,
        rules: [...new Set(findings.map((f) => f.rule))],
      });
      return;
    }
    candidates.push(fromLearning(item, side, project, cross, score, now));
  };

  const own = await readLearningsFile(layout.project(options.project).learnings);
  outcome.warnings.push(...own.warnings);
  const ownWinners = latestPerIdentity(own.entries);
  for (const item of ownWinners) consider(item, "gstack", options.project, false);

  if (options.crossProject) {
    const names = await readdir(layout.projects).catch(() => [] as string[]);
    for (const name of names.sort()) {
      if (name === options.project) continue;
      let path: string;
      try {
        path = layout.project(name).learnings;
      } catch {
        continue;
      }
      const other = await readLearningsFile(path);
      outcome.warnings.push(...other.warnings);
      for (const item of latestPerIdentity(other.entries)) {
        if (countsAcrossProjects(item.entry)) consider(item, "gstack", name, true);
      }
    }
  }

  if (workspace !== null) {
    const known = new Set(own.entries.map((item) => contentFingerprint(item.entry)));
    const memoryHits: Candidate[] = [];
    for (const file of await listMemoryFiles(workspace)) {
      let text: string;
      try {
        text = await readFile(file.path, "utf8");
      } catch (error) {
        outcome.warnings.push({
          file: file.path,
          line: 0,
          message: `cannot be read (${(error as Error).message})`,
        });
        continue;
      }
      const generatedFile = /^memory\/gstack-[A-Za-z0-9._-]+\.md$/.test(file.relative);
      const parsed = parseMemoryFile(text);
      for (const section of parsed.authored) {
        const project = targetProjectOf(section.learning, file.relative);
        if (project !== undefined && project !== options.project) continue;
        const entry = entryFromAuthored(section.learning, file.relative, "");
        delete (entry as Record<string, unknown>).ts;
        if (known.has(contentFingerprint(entry))) continue;
        consider({ file: file.path, line: section.line, entry }, "openclaw", project, false);
      }
      if (memoryLimit === 0 || generatedFile) continue;
      const modified = (await stat(file.path)).mtimeMs;
      for (const block of splitMarkdownBlocks(text)) {
        if (block.heading !== undefined && parseLearningTitle(block.title) !== undefined) continue;
        let start = 0;
        const lines = block.heading === undefined ? block.lines : [block.heading, ...block.lines];
        while (start < lines.length) {
          while (start < lines.length && lines[start]!.trim() === "") start++;
          let end = start;
          while (end < lines.length && lines[end]!.trim() !== "") end++;
          if (end > start) {
            const paragraph = lines.slice(start, end).join("\n");
            const score = matchCount(tokens, [paragraph]);
            if (score > 0) {
              const rules = screenText(paragraph);
              const line = block.line + start;
              if (rules.length > 0) outcome.withheld.push({ file: file.path, line, rules });
              else {
                const importance = /<!--\s*importance:\s*(\d+)\s*-->/.exec(paragraph);
                memoryHits.push({
                  side: "openclaw",
                  kind: "memory",
                  file: file.path,
                  line,
                  project: undefined,
                  type: undefined,
                  key: undefined,
                  text: shorten(paragraph.replace(/<!--[\s\S]*?-->/g, "")),
                  confidence: importance ? Math.min(10, Number(importance[1])) : 0,
                  ts: undefined,
                  crossProject: false,
                  score,
                  files: undefined,
                  time: modified,
                });
              }
            }
          }
          start = end;
        }
      }
    }
    memoryHits.sort(compareRank);
    candidates.sort(compareRank);
    outcome.results = [...candidates.slice(0, limit), ...memoryHits.slice(0, memoryLimit)].map(stripTime);
    return outcome;
  }
  candidates.sort(compareRank);
  outcome.results = candidates.slice(0, limit).map(stripTime);
  return outcome;
}

function stripTime(candidate: Candidate): SearchResult {
  const { time: _time, ...result } = candidate;
  return result;
}

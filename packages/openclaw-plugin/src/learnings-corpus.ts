import { readdir } from "node:fs/promises";
import { readLearningsFile } from "@gstack/learnings";
import type { PluginSettings } from "./plugin-settings";

/** One gstack learning as OpenClaw's memory search shows it, with where it came from. */
export interface CorpusHit {
  corpus: string;
  path: string;
  title: string;
  kind: string;
  score: number;
  snippet: string;
  startLine: number;
  endLine: number;
  provenanceLabel: string;
  sourceType: string;
  sourcePath: string;
  updatedAt?: string;
}

const CORPUS = "gstack";

/**
 * gstack's learnings of every project as an extra corpus for OpenClaw's memory search: a
 * learning matches when any word of the query is in its key or insight, and each hit says
 * which project, file and line it came from.
 */
export function learningsCorpus(settings: PluginSettings) {
  const all = async () => {
    const hits: (CorpusHit & { text: string })[] = [];
    const projects = await readdir(settings.layout.projects).catch(() => [] as string[]);
    for (const slug of projects) {
      const file = settings.layout.project(slug).learnings;
      const { entries } = await readLearningsFile(file).catch(() => ({ entries: [] }));
      for (const { entry, line } of entries) {
        hits.push({
          corpus: CORPUS,
          path: `${CORPUS}/${slug}/learnings.jsonl#L${line}`,
          title: `${slug}: ${entry.key}`,
          kind: entry.type,
          score: 0,
          snippet: entry.insight,
          text: `${entry.key} ${entry.insight}`.toLowerCase(),
          startLine: line,
          endLine: line,
          provenanceLabel: `gstack learning of ${slug} (${entry.source}, confidence ${entry.confidence}/10)`,
          sourceType: "gstack-learning",
          sourcePath: file,
          ...(entry.ts ? { updatedAt: entry.ts } : {}),
        });
      }
    }
    return hits;
  };
  return {
    async search(params: { query: string; maxResults?: number }): Promise<CorpusHit[]> {
      const words = params.query
        .toLowerCase()
        .split(/[^a-z0-9]+/)
        .filter((word) => word.length > 2);
      if (words.length === 0) return [];
      const scored = (await all())
        .map(({ text, ...hit }) => ({
          ...hit,
          score: words.filter((word) => text.includes(word)).length / words.length,
        }))
        .filter((hit) => hit.score > 0)
        .sort((a, b) => b.score - a.score);
      return scored.slice(0, params.maxResults ?? 10);
    },
    async get(params: { lookup: string }) {
      const hit = (await all()).find((candidate) => candidate.path === params.lookup);
      if (!hit) return null;
      const { text: _text, score: _score, snippet, ...rest } = hit;
      return { ...rest, content: snippet, fromLine: hit.startLine, lineCount: 1 };
    },
  };
}

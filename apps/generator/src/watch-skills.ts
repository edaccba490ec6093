import { basename } from "node:path";
import { watch } from "chokidar";
import { type GenerateOptions, generateToFolder } from "./generate";
import type { Bundle } from "./generate-bundle";

/** One regeneration caused by file changes. */
export interface WatchResult {
  /** Input files whose change started this run (relative to nothing: as chokidar reported). */
  changed: string[];
  written: string[];
  removed: string[];
  report: Bundle["report"];
}

/** A running watcher. */
export interface SkillWatcher {
  /** Resolves once the initial scan is done and changes are being watched. */
  ready: Promise<void>;
  /** Stops watching; waits for a regeneration in progress. */
  close(): Promise<void>;
}

const WATCHED = new Set(["SKILL.md", "SKILL.md.tmpl", "VERSION"]);

/**
 * Watches a gstack folder and regenerates the output whenever a skill, template or the
 * VERSION file changes. Changes that arrive during a run are gathered into one more run;
 * only files whose bytes change are written, so an edit to one skill rewrites that skill.
 */
export function watchSkills(
  options: GenerateOptions & {
    onResult: (result: WatchResult) => void;
    onError: (error: unknown) => void;
  },
): SkillWatcher {
  const watcher = watch(options.input, {
    ignoreInitial: true,
    depth: 1,
    ignored: (path, stats) =>
      /(^|[/\\])(\.|node_modules)/.test(path.slice(options.input.length)) ||
      (stats?.isFile() === true && !WATCHED.has(basename(path))),
  });
  let pending: string[] = [];
  let running: Promise<void> | undefined;

  const run = async (): Promise<void> => {
    while (pending.length > 0) {
      const changed = [...new Set(pending)].sort();
      pending = [];
      try {
        const { written, removed, report } = await generateToFolder(options);
        options.onResult({ changed, written, removed, report });
      } catch (error) {
        options.onError(error);
      }
    }
    running = undefined;
  };
  const schedule = (path: string) => {
    if (!WATCHED.has(basename(path))) return;
    pending.push(path);
    running ??= run();
  };
  watcher.on("add", schedule).on("change", schedule).on("unlink", schedule).on("error", options.onError);
  const ready = new Promise<void>((resolveReady) => watcher.once("ready", () => resolveReady()));
  return {
    ready,
    async close() {
      await watcher.close();
      await running;
    },
  };
}

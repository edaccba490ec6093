import { existsSync } from "node:fs";
import { type Learning, learningTypeSchema, parseValue, resolveOpenClawWorkspace } from "@gstack/contracts";
import { syncProject } from "@gstack/learnings";
import type { Audit } from "../daemon-context";

const INJECTION =
  /\b(ignore (all |any )?(previous|prior|above) instructions|disregard (the )?(system|previous)|you are now|system prompt)\b/i;

/** A learning key from its text: lower-case words joined by `-`, at most 60 characters. */
export function learningKey(text: string): string {
  const key = text
    .toLowerCase()
    .replace(/[`*_]/g, "")
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 60)
    .replace(/-+$/, "");
  return key || "learning";
}

/**
 * Turns the bullets of a report's "Learnings logged" section into gstack learnings:
 * source `observed`, confidence 5, `origin` the dispatch id. A bullet may start with a
 * type (`pitfall: …` or `[tool] …`). Bullets that read like prompt injection are dropped.
 */
export function extractLearnings(
  items: readonly string[],
  context: { dispatchId: string; ts: string },
): Learning[] {
  const learnings: Learning[] = [];
  const seen = new Set<string>();
  for (const item of items) {
    if (INJECTION.test(item)) continue;
    let text = item.trim();
    let type: Learning["type"] = "pattern";
    const prefix = /^(?:\[([a-z]+)\]|([a-z]+):)\s+(.*)$/i.exec(text);
    const named = (prefix?.[1] ?? prefix?.[2])?.toLowerCase();
    if (named && learningTypeSchema.safeParse(named).success && prefix?.[3]) {
      type = named as Learning["type"];
      text = prefix[3];
    }
    text = text.slice(0, 1000);
    const key = learningKey(text);
    if (seen.has(`${key}|${type}`)) continue;
    seen.add(`${key}|${type}`);
    learnings.push(
      parseValue("learning", {
        skill: "dispatch",
        type,
        key,
        insight: text,
        confidence: 5,
        source: "observed",
        ts: context.ts,
        trusted: false,
        origin: `dispatch:${context.dispatchId}`,
      }),
    );
  }
  return learnings;
}

/**
 * Brings a project's learnings into an OpenClaw workspace's memory, so the other runtime knows
 * them too: the workspace given, else the one `resolveOpenClawWorkspace` names, when that folder
 * exists; `false` for none. Idempotent; a failure is logged, never thrown.
 */
export function learningsSharer(options: {
  root: string;
  workspace: string | false | undefined;
  audit: Audit;
  log: (line: string) => void;
}): (dispatchId: string, project: string) => Promise<void> {
  return async (dispatchId, project) => {
    const workspace =
      options.workspace === undefined ? resolveOpenClawWorkspace(process.env) : options.workspace;
    if (workspace === false || !existsSync(workspace)) return;
    try {
      const report = await syncProject({ root: options.root, workspace, project });
      await options.audit("learnings_recorded", {
        dispatch_id: dispatchId,
        detail: { project, memory_file: report.memoryFile, exported: report.exported },
      });
    } catch (error) {
      options.log(
        `could not share learnings of ${project} with OpenClaw memory: ${(error as Error).message}`,
      );
    }
  };
}

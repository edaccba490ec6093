import { resolve } from "node:path";
import { expandHome } from "@gstack/contracts";
import { findLatestHandoff, resumePromptOf } from "@gstack/handoff";
import { searchLearnings } from "@gstack/learnings";
import { routeTask } from "@gstack/routing";
import type {
  Brief,
  BriefOptions,
  BriefTarget,
  CheckpointLine,
  LearningLine,
  RoutingAdvice,
} from "./brief-types";
import { draftDispatch } from "./draft-dispatch";
import { lastProject, recentSessions } from "./recent-sessions";
import { knownProjects, matchProject, slugOfFolder, slugOfName, trustedFolders } from "./resolve-project";

/**
 * Everything to know before working on a project: its last sessions from both runtimes, its open
 * work, the newest pending checkpoint or handoff, its top learnings (screened as memory is), the
 * routing table's advice, and the next dispatch drafted. Reads only; keeps nothing.
 */
export async function gatherBrief(target: BriefTarget, options: BriefOptions): Promise<Brief> {
  const now = options.now ?? new Date();
  const notes: string[] = [];
  const trusted = await trustedFolders(options.settings?.trustedRepos ?? []);
  let project: string | undefined;
  let folder: string | undefined;
  let resolvedBy: Brief["resolvedBy"];
  if ("folder" in target) {
    folder = resolve(expandHome(target.folder));
    project = await slugOfFolder(folder);
    resolvedBy = "folder";
  } else if ("project" in target) {
    const match = matchProject(target.project, await knownProjects(options.root), trusted);
    if (match.ok) project = match.project;
    else if (match.reason === "ambiguous") {
      return emptyBrief("none", [
        `"${target.project}" could mean ${match.candidates.join(" or ")}; name one of them`,
      ]);
    } else project = slugOfName(target.project);
    resolvedBy = "name";
  } else {
    project = await lastProject(options.root);
    resolvedBy = project ? "last" : "none";
  }
  if (project === undefined) {
    return emptyBrief(resolvedBy, ["no project has any recorded activity yet"]);
  }
  if (folder === undefined) {
    folder = [...trusted.entries()].find(([, slug]) => slug === project)?.[0];
  }

  const [sessions, openWork, checkpoint, learnings] = await Promise.all([
    recentSessions(options.root, project, options.sessions ?? 3, now),
    readOpenWork(options, project, notes),
    newestCheckpoint(options.root, project, notes),
    topLearnings(options.root, project, options.learnings ?? 5, now, notes),
  ]);
  if (sessions.problems > 0) notes.push(`${sessions.problems} unreadable activity line(s) were skipped`);
  folder ??= checkpoint?.projectDir ?? openWork?.find((work) => work.projectDir)?.projectDir;
  const routing = await routingAdvice(options.root, project, checkpoint?.branch, folder, notes);

  const empty =
    sessions.sessions.length === 0 &&
    (openWork ?? []).length === 0 &&
    checkpoint === undefined &&
    learnings.results.length === 0;
  const planFirst = folder !== undefined && (await options.settings?.planFirst?.(folder)) === true;
  const drafted = draftDispatch({
    project,
    ...(folder !== undefined ? { folder } : {}),
    ...(checkpoint ? { checkpoint } : {}),
    openWork: openWork ?? [],
    learnings: learnings.results,
    ...(options.settings?.defaultBudgetUsd !== undefined
      ? { defaultBudgetUsd: options.settings.defaultBudgetUsd }
      : {}),
    planFirst,
  });
  return {
    project,
    resolvedBy,
    ...(folder !== undefined ? { folder } : {}),
    sessions: sessions.sessions,
    ...(openWork ? { openWork } : {}),
    ...(checkpoint ? { checkpoint } : {}),
    learnings: learnings.results,
    withheld: learnings.withheld,
    ...(routing ? { routing } : {}),
    ...("draft" in drafted ? { draft: drafted.draft } : { noDraft: drafted.reason }),
    empty,
    notes,
  };
}

function emptyBrief(resolvedBy: Brief["resolvedBy"], notes: string[]): Brief {
  return { resolvedBy, sessions: [], learnings: [], withheld: 0, empty: true, notes };
}

async function readOpenWork(options: BriefOptions, project: string, notes: string[]) {
  if (!options.openWork) {
    notes.push("the dispatch daemon's state was not read, so open work is not shown");
    return undefined;
  }
  try {
    return await options.openWork(project);
  } catch (error) {
    notes.push(`the dispatch daemon's state could not be read: ${oneLine(error)}`);
    return undefined;
  }
}

async function newestCheckpoint(
  root: string,
  project: string,
  notes: string[],
): Promise<CheckpointLine | undefined> {
  try {
    const record = await findLatestHandoff({ project, pending: true }, { root });
    if (!record) return undefined;
    const { handoff } = record;
    const title = (handoff.context ?? handoff.what_i_need ?? "")
      .split("\n")
      .map((line) =>
        line
          .replace(/^#+\s*/, "")
          .replace(/^Working on:\s*/i, "")
          .trim(),
      )
      .find((line) => line.length > 0);
    return {
      ref: record.ref,
      kind: record.kind,
      timestamp: handoff.timestamp,
      ...(handoff.branch ? { branch: handoff.branch } : {}),
      ...(handoff.project_dir ? { projectDir: handoff.project_dir } : {}),
      ...(title ? { title } : {}),
      resumePrompt: resumePromptOf(handoff).prompt,
    };
  } catch (error) {
    notes.push(`checkpoints and handoffs could not be read: ${oneLine(error)}`);
    return undefined;
  }
}

async function topLearnings(
  root: string,
  project: string,
  limit: number,
  now: Date,
  notes: string[],
): Promise<{ results: LearningLine[]; withheld: number }> {
  try {
    const outcome = await searchLearnings({ root, workspace: null, project, limit, memoryLimit: 0, now });
    return {
      results: outcome.results.map((result) => ({
        ...(result.key ? { key: result.key } : {}),
        ...(result.type ? { type: result.type } : {}),
        text: result.text,
        confidence: result.confidence,
        ...(result.ts ? { ts: result.ts } : {}),
      })),
      withheld: outcome.withheld.length,
    };
  } catch (error) {
    notes.push(`learnings could not be read: ${oneLine(error)}`);
    return { results: [], withheld: 0 };
  }
}

async function routingAdvice(
  root: string,
  project: string,
  branch: string | undefined,
  folder: string | undefined,
  notes: string[],
): Promise<RoutingAdvice | undefined> {
  try {
    const result = await routeTask(
      { project, agent: "gstack", ...(branch ? { branch } : {}) },
      { root, ...(folder ? { projectDir: folder } : {}) },
    );
    if (result.source.kind === "none") return undefined;
    return {
      skills: result.skills,
      load: result.load,
      source: result.source.kind === "inline" ? "inline" : result.source.path,
    };
  } catch (error) {
    notes.push(`the routing table could not be read: ${oneLine(error)}`);
    return undefined;
  }
}

function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (message.split("\n")[0] ?? message).trim();
}

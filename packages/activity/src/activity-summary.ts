import { type ActivityEntry, isoWeekOf } from "@gstack/contracts";

/** Work on one skill within a project. */
export interface SkillSummary {
  skill: string;
  /** How many entries (runs of the skill). */
  runs: number;
  /** Seconds. */
  duration: number;
}

/** What the work produced, read from entries' `artifacts` (`pr:47`, `commit:abc1234`, `learnings:3`). */
export interface ArtifactSummary {
  /** Pull request numbers or ids, in first-seen order, without repeats. */
  pullRequests: string[];
  /** Commit ids, in first-seen order, without repeats. */
  commits: string[];
  /** Learnings recorded (the counts summed). */
  learnings: number;
  /** Any other artifact, as written, without repeats. */
  other: string[];
}

/** Everything done on one project in the summarised span. */
export interface ProjectSummary {
  project: string;
  entries: number;
  sessions: number;
  /** Seconds. */
  duration: number;
  /** The latest entry's timestamp. */
  lastActive: string;
  skills: SkillSummary[];
  artifacts: ArtifactSummary;
  /** Entries per outcome (`success`, `failed`, …); entries without one are not counted. */
  outcomes: Record<string, number>;
  branches: string[];
  /** Entries per dispatcher; work nobody dispatched is not counted. */
  dispatchers: Record<string, number>;
  /** What the work cost, in US dollars: the sum over entries that carry `cost_usd`. */
  spend: SpendSummary;
}

/** Money spent, from entries' `cost_usd`; entries without one are counted apart, not as free. */
export interface SpendSummary {
  /** US dollars, summed over the entries that say. */
  costUsd: number;
  /** How many entries said what they cost. */
  priced: number;
  /** How many did not. */
  unpriced: number;
}

/** The answer to "what did I ship": totals, then per project, busiest first. */
export interface ActivitySummary {
  entries: number;
  sessions: number;
  /** Seconds. */
  duration: number;
  artifacts: ArtifactSummary;
  projects: ProjectSummary[];
  /** Spend over the whole span. */
  spend: SpendSummary;
  /** Spend per ISO week (`2026-W48`) of the entries' timestamps, oldest first; weeks with no priced entry are left out. */
  spendByWeek: Array<{ week: string; costUsd: number; priced: number }>;
}

/**
 * Summarises entries: sessions (distinct `session` ids; an entry without one counts as
 * its own session), time, runs per skill, artifacts, outcomes and dispatchers per
 * project. Projects are ordered by time spent, then name; skills likewise.
 */
export function summarizeActivity(entries: readonly ActivityEntry[]): ActivitySummary {
  const byProject = new Map<string, ActivityEntry[]>();
  for (const entry of entries) {
    const list = byProject.get(entry.project);
    if (list) list.push(entry);
    else byProject.set(entry.project, [entry]);
  }
  const projects = [...byProject].map(([project, list]) => summarizeProject(project, list));
  projects.sort((left, right) => right.duration - left.duration || left.project.localeCompare(right.project));
  return {
    entries: entries.length,
    sessions: projects.reduce((total, project) => total + project.sessions, 0),
    duration: projects.reduce((total, project) => total + project.duration, 0),
    artifacts: collectArtifacts(entries),
    projects,
    spend: sumSpend(entries),
    spendByWeek: spendPerWeek(entries),
  };
}

function sumSpend(entries: readonly ActivityEntry[]): SpendSummary {
  let costUsd = 0;
  let priced = 0;
  for (const entry of entries) {
    if (entry.cost_usd === undefined) continue;
    costUsd += entry.cost_usd;
    priced += 1;
  }
  return { costUsd, priced, unpriced: entries.length - priced };
}

function spendPerWeek(
  entries: readonly ActivityEntry[],
): Array<{ week: string; costUsd: number; priced: number }> {
  const weeks = new Map<string, { week: string; costUsd: number; priced: number }>();
  for (const entry of entries) {
    if (entry.cost_usd === undefined) continue;
    const time = Date.parse(entry.ts);
    if (Number.isNaN(time)) continue;
    const week = isoWeekOf(new Date(time));
    const total = weeks.get(week) ?? { week, costUsd: 0, priced: 0 };
    total.costUsd += entry.cost_usd;
    total.priced += 1;
    weeks.set(week, total);
  }
  return [...weeks.values()].sort((left, right) => left.week.localeCompare(right.week));
}

function summarizeProject(project: string, entries: readonly ActivityEntry[]): ProjectSummary {
  const skills = new Map<string, SkillSummary>();
  const outcomes: Record<string, number> = {};
  const dispatchers: Record<string, number> = {};
  const branches = new Set<string>();
  const sessions = new Set<string>();
  let anonymousSessions = 0;
  let duration = 0;
  let lastActive = entries[0]!.ts;
  for (const entry of entries) {
    duration += entry.duration;
    const skill = skills.get(entry.skill) ?? { skill: entry.skill, runs: 0, duration: 0 };
    skill.runs += 1;
    skill.duration += entry.duration;
    skills.set(entry.skill, skill);
    if (entry.session) sessions.add(entry.session);
    else anonymousSessions += 1;
    if (entry.outcome) outcomes[entry.outcome] = (outcomes[entry.outcome] ?? 0) + 1;
    if (entry.dispatch) dispatchers[entry.dispatch] = (dispatchers[entry.dispatch] ?? 0) + 1;
    if (entry.branch) branches.add(entry.branch);
    if (Date.parse(entry.ts) > Date.parse(lastActive)) lastActive = entry.ts;
  }
  return {
    project,
    entries: entries.length,
    sessions: sessions.size + anonymousSessions,
    duration,
    lastActive,
    skills: [...skills.values()].sort(
      (left, right) =>
        right.duration - left.duration || right.runs - left.runs || left.skill.localeCompare(right.skill),
    ),
    artifacts: collectArtifacts(entries),
    outcomes,
    branches: [...branches],
    dispatchers,
    spend: sumSpend(entries),
  };
}

function collectArtifacts(entries: readonly ActivityEntry[]): ArtifactSummary {
  const pullRequests = new Set<string>();
  const commits = new Set<string>();
  const other = new Set<string>();
  let learnings = 0;
  for (const entry of entries) {
    for (const artifact of entry.artifacts ?? []) {
      const separator = artifact.indexOf(":");
      const kind = separator > 0 ? artifact.slice(0, separator).toLowerCase() : "";
      const value = separator > 0 ? artifact.slice(separator + 1).trim() : artifact;
      if ((kind === "pr" || kind === "pull") && value) pullRequests.add(value.replace(/^#/, ""));
      else if (kind === "commit" && value) commits.add(value);
      else if (kind === "learnings" && /^\d+$/.test(value)) learnings += Number(value);
      else other.add(artifact);
    }
  }
  return { pullRequests: [...pullRequests], commits: [...commits], learnings, other: [...other] };
}

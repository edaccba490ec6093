import type { ActivityEntry, BriefDraft, ReplyTo } from "@gstack/contracts";

/** Which project a brief is about: one named, the one a folder belongs to, or the last one worked on. */
export type BriefTarget = { project: string } | { folder: string } | { last: true };

/** Where a piece of open work stands, as the daemon's state says. */
export type OpenWorkState = "queued" | "running" | "awaiting-answer" | "awaiting-landing" | "nothing-to-land";

/** A dispatch on the project that has not ended for the person yet. */
export interface OpenWork {
  id: string;
  project: string;
  state: OpenWorkState;
  /** When it began to wait (or was queued, or started), for its age. */
  since?: string;
  /** Seconds it has waited, when the daemon says so directly. */
  ageSeconds?: number;
  branch?: string;
  base?: string;
  /** The repository folder it runs against. */
  projectDir?: string;
  /** What it was asked to do, when known. */
  task?: string;
  /** A plan or a gstack gate, for work waiting for an answer. */
  kind?: "plan" | "gate";
}

/** Reads the open work of a project from the daemon's state (its service API or its files). */
export type OpenWorkSource = (project: string) => Promise<OpenWork[]>;

/** The daemon's dispatch settings a draft follows. */
export interface DraftSettings {
  /** `default_budget_usd`: the draft's budget. */
  defaultBudgetUsd?: number;
  /** `trusted_repos`: folders a project may be found in when nothing else names one. */
  trustedRepos?: readonly string[];
  /** Whether the daemon plans dispatches in this folder first (`plan_first_repos`). */
  planFirst?: (projectDir: string) => Promise<boolean> | boolean;
}

/** What a brief reads, and from where. */
export interface BriefOptions {
  /** The gstack state root. */
  root: string;
  /** The open work; without it the brief says it could not see the daemon's state. */
  openWork?: OpenWorkSource;
  settings?: DraftSettings;
  /** How many recent sessions (default 3). */
  sessions?: number;
  /** How many learnings (default 5). */
  learnings?: number;
  /** The clock, for ages and confidence decay. */
  now?: Date;
}

/** One recent session, from either runtime. */
export interface SessionLine {
  ts: string;
  skill: string;
  /** Which runtime recorded it: gstack in Claude Code, a dispatch the daemon ran, or OpenClaw. */
  runtime: "claude-code" | "daemon" | "openclaw" | "manual";
  outcome?: string;
  branch?: string;
  /** Pull requests and commits it produced (`pr:47`, `commit:abc1234`). */
  shipped: string[];
  durationSeconds: number;
  costUsd?: number;
  dispatchId?: string;
}

/** The newest checkpoint or handoff still waiting to be picked up. */
export interface CheckpointLine {
  ref: string;
  kind: "handoff" | "checkpoint";
  timestamp: string;
  branch?: string;
  projectDir?: string;
  /** What the work was, in a line (the handoff's context or the checkpoint's title). */
  title?: string;
  resumePrompt: string;
}

export interface LearningLine {
  key?: string;
  type?: string;
  text: string;
  confidence: number;
  ts?: string;
}

export interface RoutingAdvice {
  skills: string[];
  load: string[];
  /** Where the routes came from, or why there is no advice. */
  source: string;
}

/** The fields of a drafted dispatch, before it is kept (see the `brief-draft` document). */
export interface DraftFields {
  project: string;
  project_dir: string;
  task: string;
  source: BriefDraft["source"];
  source_ref?: string;
  base?: string;
  branch?: string;
  budget_usd?: number;
  mode?: "execute" | "plan";
  handoff_id?: string;
  task_type?: string;
  learnings?: string[];
}

/** Everything a brief found about one project. */
export interface Brief {
  /** The project, or undefined when none could be found ("the last one" with no activity at all). */
  project?: string;
  /** How the project was found. */
  resolvedBy: "name" | "folder" | "last" | "none";
  folder?: string;
  sessions: SessionLine[];
  /** Undefined when the daemon's state could not be read. */
  openWork?: OpenWork[];
  checkpoint?: CheckpointLine;
  learnings: LearningLine[];
  /** Learnings left out because they look like prompt injection. */
  withheld: number;
  routing?: RoutingAdvice;
  /** The next dispatch, when there is something to continue and a folder to do it in. */
  draft?: DraftFields;
  /** Why no draft was made, when none was. */
  noDraft?: string;
  /** True when nothing at all is known about the project. */
  empty: boolean;
  /** Things the person should know about what could not be read. */
  notes: string[];
}

export type { ActivityEntry, BriefDraft, ReplyTo };

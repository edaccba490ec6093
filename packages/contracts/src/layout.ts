import { homedir } from "node:os";
import { isAbsolute, join, resolve, sep } from "node:path";
import { ContractError } from "./errors";

/** Environment variables the layout reads. */
export type LayoutEnv = Partial<
  Record<
    | "GSTACK_HOME"
    | "CLAUDE_PLUGIN_DATA"
    | "GSTACK_PROJECT_SLUG"
    | "OPENCLAW_WORKSPACE_DIR"
    | "OPENCLAW_PROFILE"
    | "HOME",
    string
  >
>;

function home(env: LayoutEnv): string {
  return env.HOME && env.HOME.length > 0 ? env.HOME : homedir();
}

/** Expands a leading `~` or `~/` to the home folder. */
export function expandHome(path: string, env: LayoutEnv = process.env): string {
  if (path === "~") return home(env);
  if (path.startsWith("~/")) return join(home(env), path.slice(2));
  return path;
}

/**
 * The gstack state root: `GSTACK_HOME`, else `CLAUDE_PLUGIN_DATA` (gstack running as a
 * Claude Code plugin), else `~/.gstack`.
 */
export function resolveGstackHome(env: LayoutEnv = process.env): string {
  if (env.GSTACK_HOME) return resolve(expandHome(env.GSTACK_HOME, env));
  if (env.CLAUDE_PLUGIN_DATA) return resolve(expandHome(env.CLAUDE_PLUGIN_DATA, env));
  return join(home(env), ".gstack");
}

/**
 * The OpenClaw workspace: `OPENCLAW_WORKSPACE_DIR`, else `~/.openclaw-<profile>/workspace`
 * when `OPENCLAW_PROFILE` is set, else `~/.openclaw/workspace`.
 */
export function resolveOpenClawWorkspace(env: LayoutEnv = process.env): string {
  if (env.OPENCLAW_WORKSPACE_DIR) return resolve(expandHome(env.OPENCLAW_WORKSPACE_DIR, env));
  if (env.OPENCLAW_PROFILE) {
    assertSafeName(env.OPENCLAW_PROFILE, "OPENCLAW_PROFILE");
    return join(home(env), `.openclaw-${env.OPENCLAW_PROFILE}`, "workspace");
  }
  return join(home(env), ".openclaw", "workspace");
}

const SAFE_NAME = /^(?!\.{1,2}$)[A-Za-z0-9._-]{1,200}$/;

/** True when `name` can be used as a single file-name segment: no separators, not `.` or `..`. */
export function isSafeName(name: string): boolean {
  return SAFE_NAME.test(name);
}

/** Throws a ContractError unless `name` is a safe single file-name segment. */
export function assertSafeName(name: string, what = "name"): string {
  if (!isSafeName(name)) {
    throw new ContractError({
      kind: "path",
      source: what,
      issues: [
        {
          path: "",
          rule: "safe-name",
          message: `${JSON.stringify(name)} cannot be used as a file name (only letters, digits, '.', '_' and '-'; not '.' or '..')`,
        },
      ],
    });
  }
  return name;
}

/** Joins `name` to `folder`, refusing any name that would leave the folder. */
export function childPath(folder: string, name: string, suffix = ""): string {
  assertSafeName(name);
  const path = join(folder, name + suffix);
  const base = resolve(folder);
  if (!resolve(path).startsWith(base + sep)) assertSafeName("..");
  return path;
}

/**
 * An ISO 8601 week label such as `2026-W14`. Weeks start on Monday; week 1 is the week
 * with the year's first Thursday, so 2026-12-31 and 2027-01-01 are both `2026-W53`.
 */
export function isoWeekOf(date: Date): string {
  const day = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate()));
  const weekday = day.getUTCDay() === 0 ? 7 : day.getUTCDay();
  day.setUTCDate(day.getUTCDate() + 4 - weekday);
  const weekYear = day.getUTCFullYear();
  const yearStart = Date.UTC(weekYear, 0, 1);
  const week = Math.ceil(((day.getTime() - yearStart) / 86_400_000 + 1) / 7);
  return `${weekYear}-W${String(week).padStart(2, "0")}`;
}

const WEEK_LABEL = /^([0-9]{4})-W([0-9]{2})$/;

/** Checks a week label such as `2026-W14` and returns its parts. */
export function parseIsoWeek(label: string): { year: number; week: number } {
  const match = WEEK_LABEL.exec(label);
  const year = Number(match?.[1]);
  const week = Number(match?.[2]);
  if (
    !match ||
    week < 1 ||
    week > 53 ||
    (week === 53 && isoWeekOf(new Date(Date.UTC(year, 11, 28))) !== label)
  ) {
    throw new ContractError({
      kind: "week",
      source: "week",
      issues: [
        {
          path: "",
          rule: "iso-week",
          message: `${JSON.stringify(label)} is not an ISO week such as 2026-W14`,
        },
      ],
    });
  }
  return { year, week };
}

/** Every path under the gstack state root, defined once. */
export function gstackLayout(root: string) {
  const dispatch = join(root, "dispatch");
  const activity = join(root, "activity");
  const handoff = join(root, "handoff");
  const projects = join(root, "projects");
  return {
    root,
    config: join(root, "config.yaml"),
    routing: join(root, "routing.yaml"),
    restrictions: join(root, "restrictions.yaml"),
    standingTasks: join(root, "standing-tasks.yaml"),
    clawvisorToken: join(root, ".clawvisor-token"),
    dispatchSecret: join(root, ".dispatch-secret"),
    /** Shared secret that signs completion callbacks to the OpenClaw plugin's route (mode 0600). */
    callbackSecret: join(root, ".callback-secret"),
    /** Bearer token for OpenClaw's hooks endpoint (`hooks.token` in openclaw.json; mode 0600). */
    openclawHooksToken: join(root, ".openclaw-hooks-token"),
    /** Bearer token of the daemon's service API over TCP, when `api_port` is set (mode 0600). */
    apiToken: join(root, ".api-token"),
    dispatch: {
      /** Finished dispatch files are renamed into this folder; the daemon watches it. */
      incoming: dispatch,
      /** Writers create files here first, then rename them into `incoming`. */
      tmp: join(dispatch, "tmp"),
      /** A dispatch the daemon has taken, moved here atomically so nobody takes it twice. */
      claimed: join(dispatch, "claimed"),
      claimedFile: (id: string) => childPath(join(dispatch, "claimed"), id, ".json"),
      /** Per-dispatch working state: state.json, the agent's stream, stderr. */
      sessions: join(dispatch, "sessions"),
      sessionDir: (id: string) => childPath(join(dispatch, "sessions"), id),
      completed: join(dispatch, "completed"),
      completedReport: (id: string) => childPath(join(dispatch, "completed"), id, ".md"),
      completedJson: (id: string) => childPath(join(dispatch, "completed"), id, ".json"),
      /** The waiting notice of each dispatch that waits for a person (`{id}.json`, its latest round). */
      awaiting: join(dispatch, "awaiting"),
      awaitingJson: (id: string) => childPath(join(dispatch, "awaiting"), id, ".json"),
      rejected: join(dispatch, "rejected"),
      queue: join(dispatch, "queue.json"),
      audit: join(dispatch, "audit.jsonl"),
      heartbeat: join(dispatch, ".daemon-heartbeat"),
      /** Endpoints and failed deliveries, rewritten by the daemon's completion delivery. */
      deliveryStatus: join(dispatch, ".delivery-status.json"),
      lock: join(dispatch, ".daemon.lock"),
      control: join(dispatch, "control"),
      /** The daemon's service API (HTTP on a Unix socket, mode 0600), while it runs. */
      apiSocket: join(dispatch, ".api.sock"),
    },
    activity: {
      dir: activity,
      /** Held while an import or backfill checks for duplicates and appends, so two never race. */
      importLock: join(activity, ".import.lock"),
      week: (week: string) => {
        parseIsoWeek(week);
        return join(activity, `activity-${week}.jsonl`);
      },
    },
    handoff: {
      dir: handoff,
      file: (id: string) => childPath(handoff, id, ".md"),
    },
    projects,
    project: (slug: string) => {
      const dir = childPath(projects, slug);
      return {
        dir,
        learnings: join(dir, "learnings.jsonl"),
        timeline: join(dir, "timeline.jsonl"),
        checkpoints: join(dir, "checkpoints"),
      };
    },
  };
}
export type GstackLayout = ReturnType<typeof gstackLayout>;

/** Every path in the OpenClaw workspace that this project reads or writes. */
export function openClawLayout(workspace: string) {
  const memory = join(workspace, "memory");
  return {
    workspace,
    agents: join(workspace, "AGENTS.md"),
    soul: join(workspace, "SOUL.md"),
    identity: join(workspace, "IDENTITY.md"),
    user: join(workspace, "USER.md"),
    memoryIndex: join(workspace, "MEMORY.md"),
    memoryDir: memory,
    /** The memory file holding one gstack project's learnings. */
    gstackMemory: (slug: string) =>
      childPath(memory, `gstack-${assertSafeName(slug, "project slug")}`, ".md"),
    skills: join(workspace, "skills"),
    skill: (name: string) => childPath(join(workspace, "skills"), name),
  };
}
export type OpenClawLayout = ReturnType<typeof openClawLayout>;

/** Resolves both layouts from the environment. */
export function resolveLayouts(env: LayoutEnv = process.env) {
  return {
    gstack: gstackLayout(resolveGstackHome(env)),
    openclaw: openClawLayout(resolveOpenClawWorkspace(env)),
  };
}

/** Keeps only the characters gstack allows in a slug. */
export function sanitizeSlug(text: string): string {
  return text.replace(/[^a-zA-Z0-9._-]/g, "");
}

/**
 * The project slug from a git remote URL: the last two path parts, `.git` removed, joined
 * with `-` (`git@github.com:acme/widget.git` gives `acme-widget`).
 */
export function slugFromRemote(remoteUrl: string): string | undefined {
  const trimmed = remoteUrl
    .trim()
    .replace(/\/+$/, "")
    .replace(/\.git$/, "");
  const parts = trimmed.split(/[/:]/).filter((part) => part.length > 0);
  if (parts.length < 2) return undefined;
  const slug = sanitizeSlug(`${parts[parts.length - 2]}-${parts[parts.length - 1]}`);
  return slug.length > 0 && isSafeName(slug) ? slug : undefined;
}

/**
 * gstack's project-slug rule: `GSTACK_PROJECT_SLUG` if set; else from the `origin` remote
 * of the outermost git repository; else the folder name. Pure: the caller supplies the
 * remote URL (or undefined) and the folder.
 */
export function projectSlug(input: { folder: string; originUrl?: string; env?: LayoutEnv }): string {
  const fromEnv = input.env?.GSTACK_PROJECT_SLUG;
  if (fromEnv) {
    const slug = sanitizeSlug(fromEnv);
    if (isSafeName(slug)) return slug;
  }
  const fromRemote = input.originUrl ? slugFromRemote(input.originUrl) : undefined;
  if (fromRemote) return fromRemote;
  const folderName = sanitizeSlug(input.folder.split(/[\\/]/).filter(Boolean).pop() ?? "");
  return isSafeName(folderName) ? folderName : "unknown";
}

/** A branch name as gstack uses it in file names: `/` becomes `-`. */
export function branchFileName(branch: string): string {
  return branch.replaceAll("/", "-");
}

/** True when `path` is absolute after expanding `~`. */
export function isAbsoluteAfterExpansion(path: string, env: LayoutEnv = process.env): boolean {
  return isAbsolute(expandHome(path, env));
}

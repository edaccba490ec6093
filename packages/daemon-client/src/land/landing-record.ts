import { readFile } from "node:fs/promises";
import {
  type AuditEventName,
  type GstackLayout,
  type LandAnswer,
  parseValue,
  writeFileAtomic,
} from "@gstack/contracts";
import { type Audit, auditLog } from "../audit-log";
import { removeWorktree } from "../worktree/git-worktrees";
import type { WorktreeRecord } from "../worktree/record";
import { forgetMove, landGit, type SavedFile } from "./checkout-move";
import { landingFile } from "./landing-file";

/** What `sessions/{id}/landing.json` keeps: the outcome, once reached. */
export interface LandingRecord {
  landing: "landed" | "pr_opened" | "discarded";
  how: NonNullable<LandAnswer["how"]>;
  at: string;
  commit?: string;
  pr?: string;
  /** Files found changed by someone else at the landing's paths after a kill, and where they went. */
  saved?: SavedFile[];
}

/** What became of a dispatch's work, once landed, pushed or discarded; undefined while it awaits. */
export async function readLanding(layout: GstackLayout, id: string): Promise<LandingRecord | undefined> {
  try {
    return JSON.parse(await readFile(landingFile(layout, id), "utf8")) as LandingRecord;
  } catch {
    return undefined;
  }
}

/**
 * What was done, asked again: the steps after the record (the completion, the audit event) are
 * carried out if a crash cut them short, so each happens once.
 */
export async function repeatAnswer(
  layout: GstackLayout,
  id: string,
  tree: WorktreeRecord,
  done: LandingRecord,
  options: { now?: () => Date; audit?: Audit },
): Promise<LandAnswer> {
  await finishLanding(layout, id, tree, done, options);
  return answer(id, tree, done, false);
}

/** The landing recorded, then the steps after it: the worktree and branch removed, the completion marked, the event audited. */
export async function finishLanding(
  layout: GstackLayout,
  id: string,
  tree: WorktreeRecord,
  record: LandingRecord,
  options: { now?: () => Date; audit?: Audit },
): Promise<LandAnswer> {
  // The record first: from here a crash is finished by asking again, never done twice.
  await writeFileAtomic(landingFile(layout, id), `${JSON.stringify(record, null, 2)}\n`);
  await forgetMove(layout, id);
  await removeWorktree(tree.repo, tree.path);
  if (record.landing !== "pr_opened" && !tree.branch_existed) {
    // Deleting a branch takes packed-refs.lock: let a kill of the daemon not strand it.
    await landGit(tree.repo, ["branch", "-D", tree.branch], { detached: true });
  }
  await markCompletion(layout, id, record);
  const event: AuditEventName = record.landing === "discarded" ? "discarded" : "landed";
  if (!(await alreadyAudited(layout, id, event))) {
    const audit = options.audit ?? auditLog(layout, options.now ?? (() => new Date()), () => undefined);
    await audit(event, {
      dispatch_id: id,
      detail: {
        how: record.how,
        branch: tree.branch,
        ...(tree.land_into ? { into: tree.land_into } : {}),
        ...(record.commit ? { commit: record.commit } : {}),
        ...(record.pr ? { pr: record.pr } : {}),
        ...(record.saved ? { saved: record.saved } : {}),
      },
    });
  }
  return answer(id, tree, record, true);
}

/** The completion says where the work went (its `pr` too, when one was opened). */
async function markCompletion(layout: GstackLayout, id: string, record: LandingRecord): Promise<void> {
  const path = layout.dispatch.completedJson(id);
  let completion: Record<string, unknown>;
  try {
    completion = JSON.parse(await readFile(path, "utf8")) as Record<string, unknown>;
  } catch {
    return;
  }
  completion.landing = record.landing;
  const pr = record.pr ? /github\.com\/([^/]+\/[^/]+)\/pull\/(\d+)/.exec(record.pr) : null;
  if (pr) completion.pr = `${pr[1]}#${pr[2]}`;
  const checked = parseValue("completion", completion);
  await writeFileAtomic(path, `${JSON.stringify(checked, null, 2)}\n`);
}

async function alreadyAudited(layout: GstackLayout, id: string, event: AuditEventName): Promise<boolean> {
  const text = await readFile(layout.dispatch.audit, "utf8").catch(() => "");
  return text.split("\n").some((line) => {
    if (!line.includes(id)) return false;
    try {
      const entry = JSON.parse(line) as { event?: string; dispatch_id?: string };
      return entry.event === event && entry.dispatch_id === id;
    } catch {
      return false;
    }
  });
}

function answer(id: string, tree: WorktreeRecord, record: LandingRecord, changed: boolean): LandAnswer {
  const into = tree.land_into ?? tree.base;
  const message =
    record.landing === "discarded"
      ? `${changed ? "discarded" : "already discarded"}: ${tree.branch} and its worktree are gone`
      : record.landing === "pr_opened"
        ? `${changed ? "pushed" : "already pushed"} ${tree.branch} and opened ${record.pr ?? "a pull request"}`
        : `${changed ? "landed" : "already landed"} ${tree.branch} into ${into} (${record.how}) at ${record.commit?.slice(0, 12) ?? "?"}${savedNote(record.saved)}`;
  return parseValue("land-answer", {
    dispatch_id: id,
    landing: record.landing,
    changed,
    how: record.how,
    branch: tree.branch,
    base: into,
    ...(record.commit ? { commit: record.commit } : {}),
    ...(record.pr ? { pr: record.pr } : {}),
    message,
  });
}

/**
 * The files found changed by someone else at the landing's paths after it was cut short, and
 * where each was moved (the landed version is in their place).
 */
function savedNote(saved: SavedFile[] | undefined): string {
  if (!saved || saved.length === 0) return "";
  const list = saved.map((entry) => `${entry.path} (now at ${entry.at})`).join(", ");
  return `; the landing had been cut short, and ${saved.length === 1 ? "a file it changes was" : `${saved.length} files it changes were`} since changed by someone else: moved out of the way, not lost: ${list}`;
}

/** The time a landing record carries. */
export function recordedAt(options: { now?: () => Date }): string {
  return (options.now?.() ?? new Date()).toISOString();
}

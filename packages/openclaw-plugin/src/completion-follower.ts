import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { type Completion, parseJson, type ReplyTo, replyToSchema } from "@gstack/contracts";
import { completionKey, completionMessage } from "./completion-message";
import type { DeliveredLedger } from "./delivered-ledger";
import { followJsonFolder } from "./folder-follower";
import { personCompletionMessage } from "./person-message";
import type { PluginSettings } from "./plugin-settings";
import type { ReportOutbox } from "./report-outbox";
import { readSessionState } from "./review/dispatch-view";
import type { ReviewLinkOf } from "./review/links";
import { sentDispatches } from "./sent-dispatches";

export interface CompletionInbox {
  /**
   * Takes one completion into the outbox unless its session saw it already or it waits
   * there: "delivered" when it was taken now (it reaches the session by itself from here),
   * "already-delivered" for a repeat, "no-session" when nothing names a session for it.
   */
  deliver(input: {
    completion: Completion;
    summary?: string;
    needsJudgment?: string[];
    reportMarkdown?: string;
    via: "completed-folder" | "callback";
  }): Promise<"delivered" | "already-delivered" | "no-session">;
}

/**
 * The one place completions go through on their way into a session, whichever way they
 * arrived: it finds the session (the completion's `reply_to`, else the plugin's record of
 * the dispatch), renders the report once, and hands it to the outbox, which keeps it until
 * the session's history shows it. Calls for the same dispatch are serialised in this
 * process.
 */
export function completionInbox(
  settings: PluginSettings,
  ledger: DeliveredLedger,
  outbox: Pick<ReportOutbox, "add" | "has">,
  reviewLink: ReviewLinkOf = async () => undefined,
): CompletionInbox {
  const sent = sentDispatches(settings.stateDir);
  const inFlight = new Map<string, Promise<"delivered" | "already-delivered" | "no-session">>();
  return {
    deliver(input) {
      const id = input.completion.dispatch_id;
      const previous = inFlight.get(id) ?? Promise.resolve("no-session" as const);
      const next = previous
        .catch(() => undefined)
        .then(async () => {
          if (outbox.has(id) || (await ledger.has(id))) return "already-delivered" as const;
          const record = await sent.recall(id);
          const replyTo = await replyToOf(input.completion, async () => record);
          if (!replyTo) return "no-session" as const;
          const reportMarkdown = input.reportMarkdown ?? (await readReport(settings, id));
          // A report through the signed route of a dispatch this host has no record of: its
          // daemon, its worktree and its diff are on another machine, which no link here reaches.
          const remote = input.via === "callback" && !(await readSessionState(settings.layout, id));
          const link = remote ? undefined : await reviewLink(id);
          const news = {
            ...input,
            ...(reportMarkdown ? { reportMarkdown } : {}),
            ...(record?.task ? { task: record.task } : {}),
          };
          const outcome = await outbox.add({
            key: completionKey(input.completion),
            dispatch_id: id,
            session_key: replyTo.session_key,
            text: completionMessage(news),
            person_text: personCompletionMessage({ ...news, ...(link ? { link } : {}), remote }),
            via: input.via,
          });
          return outcome === "queued" ? ("delivered" as const) : ("already-delivered" as const);
        });
      inFlight.set(id, next);
      void next.finally(() => {
        if (inFlight.get(id) === next) inFlight.delete(id);
      });
      return next;
    },
  };
}

async function replyToOf(
  completion: Completion,
  recall: () => Promise<{ reply_to: ReplyTo } | undefined>,
): Promise<ReplyTo | undefined> {
  const own = replyToSchema.safeParse((completion as Record<string, unknown>).reply_to);
  if (own.success) return own.data;
  return (await recall())?.reply_to;
}

async function readReport(settings: PluginSettings, id: string): Promise<string | undefined> {
  try {
    return await readFile(settings.layout.dispatch.completedReport(id), "utf8");
  } catch {
    return undefined;
  }
}

/**
 * Why a completion file is not one the daemon on this host wrote, or undefined when it is:
 * the daemon records every dispatch it accepts in `dispatch/sessions/<id>/state.json`, so a
 * file in `completed/` without that record (or naming another dispatch than its file name)
 * is not delivered into any session.
 */
export async function notTheDaemons(
  settings: PluginSettings,
  id: string,
  completion: Completion,
): Promise<string | undefined> {
  if (completion.dispatch_id !== id) return `it names dispatch ${completion.dispatch_id}, not ${id}`;
  const statePath = join(settings.layout.dispatch.sessionDir(id), "state.json");
  let state: { id?: unknown };
  try {
    state = JSON.parse(await readFile(statePath, "utf8")) as { id?: unknown };
  } catch {
    return `the daemon has no record of dispatch ${id} (${statePath} is missing or unreadable)`;
  }
  if (state.id !== id) return `${statePath} records another dispatch`;
  return undefined;
}

/** A completion that does not parse yet is read again after this, once. */
const REREAD_MILLISECONDS = 250;

/**
 * Follows `dispatch/completed/` on this host: every `{id}.json` already there at start and
 * every one that appears later goes to the inbox (which skips what was delivered). The folder
 * keeps every report the daemon ever wrote, so the follower never lists it on an event: the
 * system's notification names the file. At start, the names the delivered-ledger already holds
 * are skipped without being read.
 */
export function followCompletedFolder(
  settings: PluginSettings,
  inbox: CompletionInbox,
  ledger: Pick<DeliveredLedger, "has" | "list">,
  log: { warn(message: string): void },
): { ready: Promise<void>; close(): Promise<void> } {
  const folder = settings.layout.dispatch.completed;
  let closed = false;
  const warn = (name: string, error: unknown) =>
    log.warn(
      `gstack: could not deliver ${name}: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`,
    );
  const deliverFile = async (name: string): Promise<void> => {
    const id = name.slice(0, -".json".length);
    const path = join(folder, name);
    try {
      if (await ledger.has(id)) return;
      let text = await readFile(path, "utf8");
      let completion: Completion;
      try {
        completion = parseJson("completion", text, { source: path });
      } catch {
        // The daemon renames a whole file into place; a writer that does not gets one more read.
        await new Promise((resolve) => setTimeout(resolve, REREAD_MILLISECONDS));
        if (closed) return;
        text = await readFile(path, "utf8");
        completion = parseJson("completion", text, { source: path });
      }
      const refusal = await notTheDaemons(settings, id, completion);
      if (refusal) {
        log.warn(`gstack: not delivering ${name}: ${refusal}`);
        return;
      }
      await inbox.deliver({ completion, via: "completed-folder" });
    } catch (error) {
      // A name reported for a file already gone is no error.
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
      warn(name, error);
    }
  };
  const follower = followJsonFolder(folder, deliverFile, log, async () => new Set(await ledger.list()));
  return {
    ready: follower.ready,
    async close() {
      closed = true;
      await follower.close();
    },
  };
}

import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import { type Completion, parseJson, type ReplyTo, replyToSchema } from "@gstack/contracts";
import { watch } from "chokidar";
import { completionMessage } from "./completion-message";
import type { DeliveredLedger } from "./delivered-ledger";
import type { PluginSettings } from "./plugin-settings";
import { sentDispatches } from "./sent-dispatches";
import type { SessionDelivery } from "./session-delivery";

export interface CompletionInbox {
  /** Delivers one completion unless it was delivered before; true when it was posted now. */
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
 * the dispatch), posts the message once, and records it in the delivered-ledger. Calls for
 * the same dispatch are serialised in this process; the ledger's exclusive create guards
 * across processes.
 */
export function completionInbox(
  settings: PluginSettings,
  ledger: DeliveredLedger,
  deliver: SessionDelivery,
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
          if (await ledger.has(id)) return "already-delivered" as const;
          const replyTo = await replyToOf(input.completion, () => sent.recall(id));
          if (!replyTo) return "no-session" as const;
          const reportMarkdown = input.reportMarkdown ?? (await readReport(settings, id));
          await deliver(
            replyTo,
            completionMessage({ ...input, ...(reportMarkdown ? { reportMarkdown } : {}) }),
            id,
          );
          await ledger.record({
            dispatch_id: id,
            session_key: replyTo.session_key,
            via: input.via,
            delivered_at: new Date().toISOString(),
          });
          return "delivered" as const;
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
 * Follows `dispatch/completed/` on this host: every `{id}.json` already there at start
 * and every one that appears later goes to the inbox (which skips what was delivered).
 */
export function followCompletedFolder(
  settings: PluginSettings,
  inbox: CompletionInbox,
  log: { warn(message: string): void },
): { ready: Promise<void>; close(): Promise<void> } {
  const folder = settings.layout.dispatch.completed;
  const handle = async (path: string) => {
    if (!path.endsWith(".json")) return;
    try {
      // The daemon writes the report (.md) before the .json; give a just-created file a moment.
      const text = await readFile(path, "utf8");
      const completion = parseJson("completion", text, { source: path });
      await inbox.deliver({ completion, via: "completed-folder" });
    } catch (error) {
      log.warn(
        `gstack: could not deliver ${basename(path)}: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`,
      );
    }
  };
  const watcher = watch(folder, {
    depth: 0,
    ignoreInitial: false,
    awaitWriteFinish: { stabilityThreshold: 200, pollInterval: 50 },
  });
  watcher.on("add", (path) => void handle(path));
  watcher.on("change", (path) => void handle(path));
  const ready = new Promise<void>((resolve) => watcher.once("ready", () => resolve()));
  return { ready, close: () => watcher.close() };
}

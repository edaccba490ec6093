import { randomBytes } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  type BriefDraft,
  briefDraftIdPattern,
  childPath,
  parseJson,
  parseValue,
  type ReplyTo,
  withFileLock,
  writeFileAtomic,
} from "@gstack/contracts";
import type { DraftFields } from "./brief-types";
import {
  ANSWER_WINDOW_MS,
  type AnswerableDrafts,
  answerableDrafts,
  type DraftAsker,
  type DraftRoute,
} from "./draft-route";

/** How a kept draft is sent: through the ordinary dispatch path, with the draft's fields. */
export type DraftSender = (
  draft: BriefDraft,
) => Promise<{ sent: true; dispatchId: string } | { sent: false; reason: string }>;

/** What sending a draft did. */
export type SendOutcome =
  | { outcome: "sent"; draft: BriefDraft; dispatchId: string }
  | { outcome: "already-sent"; draft: BriefDraft; dispatchId: string }
  | { outcome: "refused"; draft: BriefDraft; reason: string }
  | { outcome: "unknown"; reason: string };

/** A draft file the store could not read: its path and why. */
export interface UnreadableDraft {
  file: string;
  reason: string;
}

/** A time-ordered id: `{prefix}-{YYYYMMDDTHHMMSS}-{8 hex}`. */
function stampedId(prefix: string, now: Date): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\..*$/, "");
  return `${prefix}-${stamp}-${randomBytes(4).toString("hex")}`;
}

/** When a stamped draft id was made (to the second), or undefined for an id without a stamp. */
function stampOf(id: string): number | undefined {
  const match = /^draft-(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})-/.exec(id);
  if (!match) return undefined;
  const [, year, month, day, hour, minute, second] = match;
  const at = Date.parse(`${year}-${month}-${day}T${hour}:${minute}:${second}Z`);
  return Number.isNaN(at) ? undefined : at;
}

/**
 * The drafts a brief made, one JSON file each (`{folder}/{draft_id}.json`, written atomically
 * and validated as `brief-draft` both ways). A draft is sent only by {@link DraftStore.send},
 * which holds the draft's lock, sends it with the dispatch id chosen when it was drafted, and
 * records that it was sent: a second send (or two at once) makes no second dispatch.
 */
export function draftStore(folder: string) {
  const fileOf = (id: string) => childPath(folder, id, ".json");

  async function read(id: string): Promise<BriefDraft | undefined> {
    if (!briefDraftIdPattern.test(id)) return undefined;
    const file = fileOf(id);
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
    return parseJson("brief-draft", text, { source: file });
  }

  async function write(draft: BriefDraft): Promise<void> {
    const file = fileOf(draft.draft_id);
    const checked = parseValue("brief-draft", draft, { source: file });
    await writeFileAtomic(file, `${JSON.stringify(checked, null, 2)}\n`, { mode: 0o600 });
  }

  return {
    folder,
    read,

    /**
     * Keeps a new draft and returns it with its ids. `deliveredTo` is where the brief showing it
     * goes (a scheduled brief's channel and person), so a yes from there can find it.
     */
    async keep(
      fields: DraftFields,
      options: { now?: Date; replyTo?: ReplyTo; deliveredTo?: DraftRoute } = {},
    ): Promise<BriefDraft> {
      const now = options.now ?? new Date();
      const draft: BriefDraft = {
        ...fields,
        draft_id: stampedId("draft", now),
        created_at: now.toISOString(),
        dispatch_id: stampedId("dispatch", now),
        ...(options.replyTo ? { reply_to: options.replyTo } : {}),
        ...(options.deliveredTo ? { delivered_to: options.deliveredTo } : {}),
      };
      await write(draft);
      return parseValue("brief-draft", draft);
    },

    /**
     * The drafts a plain yes from `asker` may mean: shown to them (in their session or delivered
     * to their channel) within the window before `now`, unsent and sent, newest first. A draft
     * file that cannot be read is named in `unreadable`, not dropped silently.
     */
    async answerable(
      asker: DraftAsker,
      options: { now?: Date; windowMs?: number } = {},
    ): Promise<AnswerableDrafts & { unreadable: UnreadableDraft[] }> {
      const now = options.now ?? new Date();
      const windowMs = options.windowMs ?? ANSWER_WINDOW_MS;
      let names: string[];
      try {
        names = await readdir(folder);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT")
          return { unsent: [], sent: [], unreadable: [] };
        throw error;
      }
      const drafts: BriefDraft[] = [];
      const unreadable: UnreadableDraft[] = [];
      for (const name of names) {
        if (!name.endsWith(".json") || name.startsWith(".")) continue;
        const id = name.slice(0, -".json".length);
        // The id's stamp says when it was made: older files are not opened (its second may round down).
        const stamp = stampOf(id);
        if (stamp !== undefined && now.getTime() - stamp > windowMs + 1000) continue;
        try {
          const draft = await read(id);
          if (draft) drafts.push(draft);
        } catch (error) {
          unreadable.push({
            file: fileOf(id),
            reason: (error instanceof Error ? error.message : String(error)).split("\n")[0] ?? "",
          });
        }
      }
      return { ...answerableDrafts(drafts, asker, now, windowMs), unreadable };
    },

    /** Sends a kept draft once; every later call answers with the dispatch it became. */
    async send(
      id: string,
      sender: DraftSender,
      options: { now?: Date; replyTo?: ReplyTo } = {},
    ): Promise<SendOutcome> {
      if (!briefDraftIdPattern.test(id))
        return { outcome: "unknown", reason: `${JSON.stringify(id)} is not a draft id` };
      return withFileLock(join(folder, `.${id}.lock`), async () => {
        const draft = await read(id);
        if (!draft) return { outcome: "unknown", reason: `no draft ${id} is kept` };
        if (draft.sent) return { outcome: "already-sent", draft, dispatchId: draft.sent.dispatch_id };
        const result = await sender(draft);
        if (!result.sent) return { outcome: "refused", draft, reason: result.reason };
        const sent: BriefDraft = {
          ...draft,
          sent: {
            dispatch_id: result.dispatchId,
            at: (options.now ?? new Date()).toISOString(),
            ...(options.replyTo ? { reply_to: options.replyTo } : {}),
          },
        };
        await write(sent);
        return { outcome: "sent", draft: sent, dispatchId: result.dispatchId };
      });
    },
  };
}
export type DraftStore = ReturnType<typeof draftStore>;

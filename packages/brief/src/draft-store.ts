import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
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

/** A time-ordered id: `{prefix}-{YYYYMMDDTHHMMSS}-{8 hex}`. */
function stampedId(prefix: string, now: Date): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\..*$/, "");
  return `${prefix}-${stamp}-${randomBytes(4).toString("hex")}`;
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

    /** Keeps a new draft and returns it with its ids. */
    async keep(fields: DraftFields, options: { now?: Date; replyTo?: ReplyTo } = {}): Promise<BriefDraft> {
      const now = options.now ?? new Date();
      const draft: BriefDraft = {
        ...fields,
        draft_id: stampedId("draft", now),
        created_at: now.toISOString(),
        dispatch_id: stampedId("dispatch", now),
        ...(options.replyTo ? { reply_to: options.replyTo } : {}),
      };
      await write(draft);
      return parseValue("brief-draft", draft);
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

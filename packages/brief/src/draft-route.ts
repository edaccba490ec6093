import type { BriefDraft } from "@gstack/contracts";

/** Where a brief went or a yes came from: an OpenClaw channel and the person's address on it. */
export type DraftRoute = NonNullable<BriefDraft["delivered_to"]>;

/** Who says yes without naming a draft: their session, and the channel route it answers on. */
export interface DraftAsker {
  sessionKey?: string;
  route?: DraftRoute;
}

/**
 * How long a draft can be answered with a plain yes: a morning brief until the evening, and never
 * together with the next morning's.
 */
export const ANSWER_WINDOW_MS = 12 * 3_600_000;

/** Target-kind prefixes channels put before an address (`user:42` and `42` are one person). */
const KIND_PREFIX = /^(?:user|direct|dm|channel|group|room|chat):/i;

/** The address alone: the channel's own `channel:` prefix and a target-kind prefix set aside. */
export function addressOf(route: DraftRoute): string {
  let to = route.to.trim();
  const own = `${route.channel.trim()}:`;
  if (to.toLowerCase().startsWith(own.toLowerCase())) to = to.slice(own.length);
  return to.replace(KIND_PREFIX, "");
}

/**
 * Whether two routes reach the same person: the same channel and address; an account or thread
 * counts only when both name one (a scheduled delivery often names neither).
 */
export function sameRoute(a: DraftRoute, b: DraftRoute): boolean {
  if (a.channel.trim().toLowerCase() !== b.channel.trim().toLowerCase()) return false;
  if (addressOf(a) !== addressOf(b)) return false;
  if (a.account_id !== undefined && b.account_id !== undefined && a.account_id !== b.account_id) return false;
  if (a.thread_id !== undefined && b.thread_id !== undefined && a.thread_id !== b.thread_id) return false;
  return true;
}

/** Whether `draft` was shown to `asker`: given in their session, or delivered to their route. */
export function shownTo(draft: BriefDraft, asker: DraftAsker): boolean {
  if (asker.sessionKey && draft.reply_to?.session_key === asker.sessionKey) return true;
  return Boolean(asker.route && draft.delivered_to && sameRoute(draft.delivered_to, asker.route));
}

/** The drafts a plain yes from `asker` may mean, newest first: unsent ones, and ones already sent. */
export interface AnswerableDrafts {
  unsent: BriefDraft[];
  sent: BriefDraft[];
}

/** Of `drafts`, those shown to `asker` within the window before `now`, newest first. */
export function answerableDrafts(
  drafts: readonly BriefDraft[],
  asker: DraftAsker,
  now: Date,
  windowMs = ANSWER_WINDOW_MS,
): AnswerableDrafts {
  const recent = drafts
    .filter((draft) => {
      const age = now.getTime() - Date.parse(draft.created_at);
      return age >= 0 && age <= windowMs && shownTo(draft, asker);
    })
    .sort(
      (a, b) => Date.parse(b.created_at) - Date.parse(a.created_at) || b.draft_id.localeCompare(a.draft_id),
    );
  return { unsent: recent.filter((draft) => !draft.sent), sent: recent.filter((draft) => draft.sent) };
}

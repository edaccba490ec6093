import type { z } from "zod";
import { lazySchema } from "../lazy";
import { replyToSchema } from "./callback";
import { dispatchIdSchema, nonEmptyString, timestampSchema } from "./common";

/** One pending decision of a gstack gate, numbered as the person reads it. */
export const awaitingGateItemSchema = lazySchema((z) =>
  z
    .looseObject({
      label: nonEmptyString.describe("The decision's label in gstack's reply grammar, e.g. 'd3'."),
      title: z.string().describe("What the decision is about."),
      options: z.array(z.string()).describe("Its options, in order: a, b, c…"),
      recommended: z.string().nullable().describe("The recommended option, or null when gstack has none."),
    })
    .describe("A pending decision of a gstack gate."),
);

/**
 * The waiting notice of a dispatch: written by the daemon to `dispatch/awaiting/{id}.json` each
 * time a dispatch starts to wait for a person (its plan is ready, or a gstack gate is pending,
 * and again for every new round after a revision). Not an outcome: the dispatch is still open,
 * and its completion comes later in `dispatch/completed/`. Receivers post it into the session
 * that asked (`reply_to`), once per dispatch and round.
 */
export const awaitingNoticeSchema = lazySchema((z) =>
  z
    .looseObject({
      dispatch_id: dispatchIdSchema,
      status: z.literal("awaiting").describe("Always 'awaiting': the dispatch waits and has not ended."),
      project: nonEmptyString.optional(),
      kind: z.enum(["plan", "gate"]),
      since: timestampSchema,
      expires_at: timestampSchema.describe("When the wait ends unanswered (the dispatch is then cancelled)."),
      round: z.int().min(1).describe("Which plan (or gate revision) this is; an answer names it."),
      summary: z.string().describe("The plan, or the gate's items, as the agent reported them."),
      how_to_answer: nonEmptyString.describe(
        "The command line that answers, e.g. gstack-dispatch answer <id> approve.",
      ),
      reply_to: replyToSchema.optional(),
      items: z
        .array(awaitingGateItemSchema)
        .optional()
        .describe("For a gate: its pending decisions, in the order the summary numbers them."),
    })
    .describe("A dispatch that waits for a person's answer, for its session."),
);
export type AwaitingNotice = z.output<typeof awaitingNoticeSchema>;

/** The `type` of a waiting-notice callback body. */
export const AWAITING_CALLBACK_TYPE = "gstack.dispatch.awaiting";

/**
 * The body a daemon POSTs to a gstack-aware receiver (the OpenClaw plugin's signed route, the
 * same URL as completions) each time a dispatch starts to wait: the `awaiting-notice` of that
 * round, signed exactly like a completion callback. Its `type` tells it from a
 * `completion-callback`; `notice.dispatch_id` is `dispatch_id`.
 */
export const awaitingCallbackSchema = lazySchema((z) =>
  z
    .looseObject({
      type: z.literal(AWAITING_CALLBACK_TYPE),
      dispatch_id: dispatchIdSchema,
      sent_at: timestampSchema.describe(
        "When this attempt was sent; the signature also covers its own timestamp.",
      ),
      notice: awaitingNoticeSchema,
      delivered_by: nonEmptyString.optional().describe("The daemon host that sent it."),
    })
    .describe("A dispatch's waiting notice, POSTed by the daemon to a gstack-aware receiver."),
);
export type AwaitingCallback = z.output<typeof awaitingCallbackSchema>;

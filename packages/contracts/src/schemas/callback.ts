import type { z } from "zod";
import { lazySchema } from "../lazy";
import { boundedString, dispatchIdSchema, nonEmptyString, timestampSchema } from "./common";
import { completionSchema } from "./completion";

/**
 * Who asked for a dispatch and where its completion should be delivered. The OpenClaw plugin
 * fills it in from the agent session that called the dispatch tool; the daemon copies it into
 * the completion, so a receiver can post the report into that session without a lookup.
 */
export const replyToSchema = lazySchema((z) =>
  z
    .looseObject({
      runtime: z.literal("openclaw").describe("The runtime that owns the session."),
      session_key: boundedString(512, 1).describe("OpenClaw session key, e.g. 'agent:main:main'."),
      agent_id: boundedString(128, 1).optional().describe("OpenClaw agent id, when not the default agent."),
      session_id: boundedString(512, 1)
        .optional()
        .describe("OpenClaw session id at the time of the dispatch."),
    })
    .describe("The OpenClaw session a dispatch's completion goes back to."),
);
export type ReplyTo = z.output<typeof replyToSchema>;

/** The `type` of a completion callback body. */
export const COMPLETION_CALLBACK_TYPE = "gstack.dispatch.completion";

/**
 * The body the daemon POSTs to a receiver that understands gstack (the OpenClaw plugin's
 * route): the terminal completion of one dispatch, signed with the callback secret (see
 * `signCallback`). OpenClaw's own hooks endpoints get a `message`/`text` body instead.
 */
export const completionCallbackSchema = lazySchema((z) =>
  z
    .looseObject({
      type: z.literal(COMPLETION_CALLBACK_TYPE),
      dispatch_id: dispatchIdSchema,
      sent_at: timestampSchema.describe(
        "When this attempt was sent; the signature also covers its own timestamp.",
      ),
      completion: completionSchema,
      summary: boundedString(20_000).optional().describe("The report's summary section, as Markdown."),
      needs_judgment: z
        .array(boundedString(4000, 1))
        .optional()
        .describe("Each 'needs human judgment' item of the report."),
      report_markdown: boundedString(200_000).optional().describe("The whole Markdown report."),
      delivered_by: nonEmptyString.optional().describe("The daemon host that sent it."),
    })
    .describe("A dispatch's completion, POSTed by the daemon to a gstack-aware receiver."),
);
export type CompletionCallback = z.output<typeof completionCallbackSchema>;

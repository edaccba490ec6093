import type { z } from "zod";
import { lazySchema } from "../lazy";
import { nonEmptyString } from "./common";

/** One rule of a restriction template: an action kind, a pattern, and why it is blocked. */
export const restrictionSchema = lazySchema((z) =>
  z.looseObject({
    block: z.enum(["exec", "read", "write"]),
    pattern: nonEmptyString,
    reason: nonEmptyString,
  }),
);
export type Restriction = z.output<typeof restrictionSchema>;

/** A restriction template, e.g. `restrictions.yaml`: rules Clawvisor and the daemon enforce. */
export const restrictionTemplateSchema = lazySchema((z) =>
  z
    .looseObject({
      restrictions: z.array(restrictionSchema),
    })
    .describe("Actions a dispatched agent must never take."),
);
export type RestrictionTemplate = z.output<typeof restrictionTemplateSchema>;

/** The actions of the `gstack-coding` Clawvisor service. */
export const serviceActionSchema = lazySchema((z) =>
  z.enum(["spawn-session", "check-status", "get-completion", "cancel-session", "list-sessions"]),
);
export type ServiceAction = z.infer<typeof serviceActionSchema>;

/** A standing Clawvisor task: trusted work that runs without asking each time. */
export const standingTaskSchema = lazySchema((z) =>
  z
    .looseObject({
      name: nonEmptyString,
      scope: z.array(serviceActionSchema).min(1),
      repos: z.array(nonEmptyString).default([]),
      restrictions: z.array(nonEmptyString).default([]),
      auto_execute: z.boolean().default(false),
      session_id: z.enum(["required", "optional"]).default("required"),
    })
    .describe("Pre-approved scope for dispatches in trusted repositories."),
);
export type StandingTask = z.output<typeof standingTaskSchema>;

/**
 * Failure modes a caller must be able to tell apart to retry sensibly. The first four are
 * the design's transport failures (`daemon_crashed`: the service answers but the daemon is
 * not running; `queue_full`: try again after `retry_after_seconds`). The rest are the daemon's
 * own refusals: input it will never take as sent, an unknown dispatch, a bad request.
 */
export const callbackErrorCodeSchema = lazySchema((z) =>
  z.enum([
    "mac_asleep",
    "tunnel_down",
    "daemon_crashed",
    "queue_full",
    "daemon_stopping",
    "invalid_json",
    "invalid_dispatch",
    "too_large",
    "bad_signature",
    "expired",
    "unknown_agent",
    "bad_callback_url",
    "project_not_found",
    "untrusted_repo",
    "duplicate",
    "not_found",
    "bad_request",
    "unauthorized",
    "unknown_action",
    "method_not_allowed",
    "internal_error",
    "land_refused",
    "answer_refused",
  ]),
);
export type CallbackErrorCode = z.infer<typeof callbackErrorCodeSchema>;

/** The error body returned when a dispatch or callback cannot be delivered. */
export const callbackErrorSchema = lazySchema((z) =>
  z
    .looseObject({
      error: callbackErrorCodeSchema,
      message: nonEmptyString,
      retry_after_seconds: z.int().min(0).optional(),
      dispatch_id: z.string().optional(),
      rule: z
        .string()
        .optional()
        .describe("The intake rule a refused dispatch broke (e.g. 'trusted-repos'), as in the audit log."),
    })
    .describe("Why a dispatch or callback could not be delivered."),
);
export type CallbackError = z.output<typeof callbackErrorSchema>;

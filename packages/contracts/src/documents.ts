import type { z } from "zod";
import { activityEntrySchema, timelineEventSchema } from "./schemas/activity";
import { awaitingCallbackSchema, awaitingNoticeSchema } from "./schemas/awaiting-notice";
import { briefDraftSchema } from "./schemas/brief-draft";
import { completionCallbackSchema } from "./schemas/callback";
import { callbackErrorSchema, restrictionTemplateSchema, standingTaskSchema } from "./schemas/clawvisor";
import { completionSchema } from "./schemas/completion";
import { daemonConfigFileSchema } from "./schemas/daemon-config";
import { auditEventSchema, heartbeatSchema, listSessionsResponseSchema } from "./schemas/daemon-state";
import { dispatchSchema } from "./schemas/dispatch";
import {
  gstackDecisionSchema,
  gstackFindingSchema,
  gstackRunManifestSchema,
  gstackTaskSchema,
} from "./schemas/gstack-run";
import { checkpointFrontmatterSchema, handoffSchema } from "./schemas/handoff";
import { learningSchema } from "./schemas/learning";
import { routingConfigSchema } from "./schemas/routing";
import {
  answerAnswerSchema,
  answerRequestSchema,
  cancelAnswerSchema,
  cancelRequestSchema,
  dispatchSnapshotSchema,
  landAnswerSchema,
  landRequestSchema,
  serviceHealthSchema,
  spawnAnswerSchema,
  spawnRequestSchema,
} from "./schemas/service-api";

/**
 * Every document kind shared between the runtimes. The key is the kind's name, used in
 * error messages and as the file name of its JSON Schema (`schemas/{name}.schema.json`).
 */
export const documentSchemas = {
  dispatch: dispatchSchema,
  completion: completionSchema,
  handoff: handoffSchema,
  "activity-entry": activityEntrySchema,
  "timeline-event": timelineEventSchema,
  learning: learningSchema,
  "checkpoint-frontmatter": checkpointFrontmatterSchema,
  routing: routingConfigSchema,
  "daemon-config": daemonConfigFileSchema,
  heartbeat: heartbeatSchema,
  "audit-event": auditEventSchema,
  "list-sessions": listSessionsResponseSchema,
  "restriction-template": restrictionTemplateSchema,
  "standing-task": standingTaskSchema,
  "callback-error": callbackErrorSchema,
  "completion-callback": completionCallbackSchema,
  "spawn-request": spawnRequestSchema,
  "spawn-answer": spawnAnswerSchema,
  "dispatch-snapshot": dispatchSnapshotSchema,
  "cancel-request": cancelRequestSchema,
  "cancel-answer": cancelAnswerSchema,
  "service-health": serviceHealthSchema,
  "gstack-run": gstackRunManifestSchema,
  "gstack-decision": gstackDecisionSchema,
  "gstack-finding": gstackFindingSchema,
  "gstack-task": gstackTaskSchema,
  "land-request": landRequestSchema,
  "land-answer": landAnswerSchema,
  "answer-request": answerRequestSchema,
  "answer-answer": answerAnswerSchema,
  "awaiting-notice": awaitingNoticeSchema,
  "awaiting-callback": awaitingCallbackSchema,
  "brief-draft": briefDraftSchema,
} as const satisfies Record<string, z.ZodType>;

export type DocumentKind = keyof typeof documentSchemas;
export type DocumentOf<K extends DocumentKind> = z.output<(typeof documentSchemas)[K]>;

export const documentKinds = Object.keys(documentSchemas) as DocumentKind[];

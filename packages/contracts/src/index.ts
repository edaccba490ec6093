export type { CallbackSignatureCheck } from "./callback-signature";
export {
  CALLBACK_SIGNATURE_HEADER,
  CALLBACK_TIMESTAMP_HEADER,
  CALLBACK_TOLERANCE_SECONDS,
  callbackSignedBytes,
  signCallback,
  verifyCallback,
} from "./callback-signature";
export type { ConfigConflict } from "./config";
export { resolveDispatchSettings } from "./config";
export type { DirectoryWatchHandlers } from "./directory-watch";
export { DirectoryWatch } from "./directory-watch";
export type { WrittenDispatch } from "./dispatch-file";
export { prepareDispatch, writeDispatchFile } from "./dispatch-file";
export type { DocumentKind, DocumentOf } from "./documents";
export { documentKinds, documentSchemas } from "./documents";
export type { ContractIssue } from "./errors";
export { ContractError } from "./errors";
export type { FileLockOptions } from "./file-lock";
export { LockTimeoutError, processAlive, withFileLock } from "./file-lock";
export { appendJsonLines, appendLines, writeFileAtomic } from "./files";
export { formatPath, toContractIssues } from "./issues";
export { allJsonSchemas, jsonSchemaOf, SCHEMA_BASE_URL, schemaFiles } from "./json-schema";
export type { GstackLayout, LayoutEnv, OpenClawLayout } from "./layout";
export {
  assertSafeName,
  branchFileName,
  childPath,
  expandHome,
  gstackLayout,
  isAbsoluteAfterExpansion,
  isoWeekOf,
  isSafeName,
  openClawLayout,
  parseIsoWeek,
  projectSlug,
  resolveGstackHome,
  resolveLayouts,
  resolveOpenClawWorkspace,
  sanitizeSlug,
  slugFromRemote,
} from "./layout";
/** yaml, loaded the first time it is asked for (and the copy bundles carry): for packages that parse YAML only on some paths. */
export { loadYaml, provideDependencyLoaders } from "./lazy";
export type { OpenClawJudgement, OpenClawStanding } from "./openclaw-support";
export {
  judgeOpenClaw,
  NEWEST_TESTED_OPENCLAW,
  OLDEST_TESTED_OPENCLAW,
  openclawVersionIn,
  SUPPORTED_OPENCLAW_RANGE,
  TESTED_OPENCLAW_TEXT,
  TESTED_OPENCLAW_VERSIONS,
} from "./openclaw-support";
export type { JsonLineProblem, SourceOptions } from "./parse";
export { checkValue, parseJson, parseJsonLines, parseValue, parseYaml } from "./parse";
export type { ChangeSeverity, JsonSchema, SchemaChange } from "./schema-compatibility";
export { compareSchemaSets, compareSchemas, hasBreakingChange } from "./schema-compatibility";
export type { ActivityEntry, TimelineEvent } from "./schemas/activity";
export { activityEntrySchema, timelineEventSchema } from "./schemas/activity";
export type { AwaitingCallback, AwaitingNotice } from "./schemas/awaiting-notice";
export {
  AWAITING_CALLBACK_TYPE,
  awaitingCallbackSchema,
  awaitingGateItemSchema,
  awaitingNoticeSchema,
} from "./schemas/awaiting-notice";
export type { BriefDraft } from "./schemas/brief-draft";
export { briefDraftIdPattern, briefDraftSchema, briefDraftSources } from "./schemas/brief-draft";
export type { CompletionCallback, ReplyTo } from "./schemas/callback";
export { COMPLETION_CALLBACK_TYPE, completionCallbackSchema, replyToSchema } from "./schemas/callback";
export type {
  CallbackError,
  CallbackErrorCode,
  Restriction,
  RestrictionTemplate,
  ServiceAction,
  StandingTask,
} from "./schemas/clawvisor";
export {
  callbackErrorCodeSchema,
  callbackErrorSchema,
  restrictionSchema,
  restrictionTemplateSchema,
  serviceActionSchema,
  standingTaskSchema,
} from "./schemas/clawvisor";
export {
  boundedString,
  codePointLength,
  dispatchIdSchema,
  HTTP_URL_PATTERN,
  httpUrlSchema,
  MAX_BUDGET_USD,
  projectSlugSchema,
  SAFE_TEXT_PATTERN,
  SKILL_NAME_PATTERN,
  safeNamePattern,
  skillNameSchema,
  targetAgentPattern,
  targetAgentSchema,
  targetAgents,
  timestampSchema,
} from "./schemas/common";
export type { Completion, CompletionInput, CompletionStatus, FailureKind } from "./schemas/completion";
export {
  completionSchema,
  completionStatusSchema,
  failureKindSchema,
  PULL_REQUEST_PATTERN,
} from "./schemas/completion";
export type { AgentCommand, DaemonConfigFile, DispatchSettings } from "./schemas/daemon-config";
export { agentCommandSchema, daemonConfigFileSchema, dispatchSettingsSchema } from "./schemas/daemon-config";
export type { AuditEvent, AuditEventName, Heartbeat, ListSessionsResponse } from "./schemas/daemon-state";
export {
  auditEventNameSchema,
  auditEventSchema,
  heartbeatSchema,
  listSessionsResponseSchema,
  sessionStateSchema,
} from "./schemas/daemon-state";
export type { Dispatch, DispatchInput } from "./schemas/dispatch";
export { dispatchSchema } from "./schemas/dispatch";
export type {
  GstackDecision,
  GstackFinding,
  GstackResultLine,
  GstackResultStatus,
  GstackRunManifest,
  GstackRunSummary,
  GstackSeverity,
  GstackTask,
} from "./schemas/gstack-run";
export {
  formatGstackResultLine,
  gstackDecisionSchema,
  gstackFindingSchema,
  gstackResultStatuses,
  gstackResultStatusSchema,
  gstackRunManifestSchema,
  gstackRunSummarySchema,
  gstackSeverities,
  gstackTaskSchema,
  parseGstackResultLine,
} from "./schemas/gstack-run";
export type { CheckpointFrontmatter, Handoff, HandoffInput } from "./schemas/handoff";
export {
  checkpointFrontmatterSchema,
  handoffSchema,
  RESUME_PROMPT_MAX,
  runtimeNameSchema,
} from "./schemas/handoff";
export type { Learning, LearningSource, LearningType } from "./schemas/learning";
export {
  learningSchema,
  learningSourceSchema,
  learningSources,
  learningTypeSchema,
  learningTypes,
} from "./schemas/learning";
export type { Route, RouteMatch, RoutingConfig } from "./schemas/routing";
export { routeMatchSchema, routeSchema, routingConfigSchema } from "./schemas/routing";
export type {
  AnswerAnswer,
  AnswerRequest,
  Awaiting,
  CancelAnswer,
  CancelRequest,
  DispatchSnapshot,
  LandAnswer,
  LandRequest,
  ServiceApiRoute,
  ServiceHealth,
  SnapshotStatus,
  SpawnAnswer,
  SpawnRequest,
} from "./schemas/service-api";
export {
  answerAnswerSchema,
  answerRequestSchema,
  awaitingSchema,
  cancelAnswerSchema,
  cancelRequestSchema,
  dispatchSnapshotSchema,
  landAnswerSchema,
  landRequestSchema,
  SERVICE_API_ROUTES,
  SERVICE_API_VERSION,
  serviceHealthSchema,
  snapshotStatusSchema,
  spawnAnswerSchema,
  spawnRequestSchema,
} from "./schemas/service-api";
export type { SignatureCheck } from "./signature";
export {
  canonicalJson,
  readSecretFile,
  SIGNATURE_FIELD,
  signDocument,
  signedBytes,
  verifyDocument,
  withSignature,
} from "./signature";
export { isTimestamp, TIMESTAMP_PATTERN } from "./timestamp";

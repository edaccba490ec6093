export type {
  AgentFailure,
  AgentProgress,
  AgentRunResult,
  AgentStarter,
  RunningAgent,
  StartAgentOptions,
} from "./agent-types";
export type { CompletionPlan, CompletionStepName } from "./completion";
export { COMPLETION_STEPS } from "./completion";
export type { CancelOutcome, DaemonOptions, OfferVerdict } from "./daemon";
export { Daemon } from "./daemon";
export { DaemonError } from "./errors";
export type { DispatchCheckContext, IntakeRules, IntakeVerdict, Refusal } from "./intake";
export { checkDispatch, checkProjectDir, expiresAt, judgeDispatch, MAX_DISPATCH_BYTES } from "./intake";
export type { LandOptions } from "./land/land";
export { discardDispatch, LandRefusal, landDispatch } from "./land/land";
export { extractLearnings, learningKey } from "./learnings";
export type { CompletionDeliveryOptions } from "./outbox-delivery";
export { createCompletionDelivery } from "./outbox-delivery";
export { buildPrompt, REPORT_SECTIONS } from "./prompt";
export type { ReportFacts, ReportSections } from "./report";
export { bulletItems, completeSections, parseReportSections, renderReport } from "./report";
export { startRunnerAgent } from "./runner-agent";
export type { ApiResponse, ApiTarget } from "./service-api/client";
export { ApiUnreachableError, apiRequest } from "./service-api/client";
export { reachDaemonApi } from "./service-api/local-api";
export type { ServiceSpec } from "./service-unit";
export {
  renderLaunchdPlist,
  renderSystemdUnit,
  SERVICE_LABEL,
  SYSTEMD_UNIT,
  servicePath,
} from "./service-unit";
export type { SessionState } from "./session-state";
export type { DaemonStatus } from "./status";
export { formatStatus, readDeliveryStatus, readStatus } from "./status";
export { requestCancel, submitDispatch } from "./submit";

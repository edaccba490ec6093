export type { CancelOutcome, DaemonOptions, OfferVerdict } from "./daemon";
export { Daemon } from "./daemon";
export type { CompletionDeliveryOptions } from "./deliver/outbox-delivery";
export { createCompletionDelivery } from "./deliver/outbox-delivery";
export { DaemonError } from "./errors";
export type { CompletionPlan, CompletionStepName } from "./finish/completion";
export { COMPLETION_STEPS } from "./finish/completion";
export { extractLearnings, learningKey } from "./finish/learnings";
export type { ReportFacts, ReportSections } from "./finish/report";
export { bulletItems, completeSections, parseReportSections, renderReport } from "./finish/report";
export type { DispatchCheckContext, IntakeRules, IntakeVerdict, Refusal } from "./intake/intake";
export {
  checkDispatch,
  checkProjectDir,
  expiresAt,
  judgeDispatch,
  MAX_DISPATCH_BYTES,
} from "./intake/intake";
export type { LandOptions } from "./land/land";
export { discardDispatch, LandRefusal, landDispatch } from "./land/land";
export type {
  AgentFailure,
  AgentProgress,
  AgentRunResult,
  AgentStarter,
  RunningAgent,
  StartAgentOptions,
} from "./run/agent-types";
export { buildPrompt, REPORT_SECTIONS } from "./run/prompt";
export { startRunnerAgent } from "./run/runner-agent";
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
export { folderOrRepositoryListed } from "./trust/trust";

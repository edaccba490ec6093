// What talks to a daemon (its service API client, a report's sections, the trust of a project folder) lives in
// @gstack/daemon-client; it stays exported here for the programs that import it from the daemon.
export type {
  AgentFailure,
  AgentProgress,
  AgentRunResult,
  AgentStarter,
  ApiResponse,
  ApiTarget,
  DaemonStatus,
  LandOptions,
  ReportSections,
  RunningAgent,
  SessionState,
  StartAgentOptions,
} from "@gstack/daemon-client";
export {
  ApiUnreachableError,
  apiRequest,
  bulletItems,
  checkProjectDir,
  DaemonError,
  discardDispatch,
  folderOrRepositoryListed,
  formatStatus,
  LandRefusal,
  landDispatch,
  parseReportSections,
  REPORT_SECTIONS,
  reachDaemonApi,
  readDeliveryStatus,
  readStatus,
  requestCancel,
  submitDispatch,
} from "@gstack/daemon-client";
export type { CancelOutcome, DaemonOptions, OfferVerdict } from "./daemon";
export { Daemon } from "./daemon";
export type { CompletionDeliveryOptions } from "./deliver/outbox-delivery";
export { createCompletionDelivery } from "./deliver/outbox-delivery";
export { expiresAt } from "./expiry";
export type { CompletionPlan, CompletionStepName } from "./finish/completion";
export { COMPLETION_STEPS } from "./finish/completion";
export { extractLearnings, learningKey } from "./finish/learnings";
export type { ReportFacts } from "./finish/report";
export { completeSections, renderReport } from "./finish/report";
export type { DispatchCheckContext, IntakeRules, IntakeVerdict, Refusal } from "./intake/intake";
export { checkDispatch, judgeDispatch, MAX_DISPATCH_BYTES } from "./intake/intake";
export { buildPrompt } from "./run/prompt";
export { startRunnerAgent } from "./run/runner-agent";
export type { ServiceSpec } from "./service-unit";
export {
  renderLaunchdPlist,
  renderSystemdUnit,
  SERVICE_LABEL,
  SYSTEMD_UNIT,
  servicePath,
} from "./service-unit";

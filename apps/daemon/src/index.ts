export type {
  AgentFailure,
  AgentProgress,
  AgentRunResult,
  AgentStarter,
  RunningAgent,
  StartAgentOptions,
} from "./agent-types";
export type { DaemonOptions } from "./daemon";
export { Daemon } from "./daemon";
export { DaemonError } from "./errors";
export type { DispatchCheckContext, Refusal } from "./intake";
export { checkDispatch, checkProjectDir, expiresAt, MAX_DISPATCH_BYTES } from "./intake";
export { extractLearnings, learningKey } from "./learnings";
export { buildPrompt, REPORT_SECTIONS } from "./prompt";
export type { ReportSections } from "./report";
export { bulletItems, parseReportSections, renderReport } from "./report";
export { startRunnerAgent } from "./runner-agent";

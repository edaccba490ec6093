export type { AcpPermissionDecision, AcpPermissionPolicy, AcpPermissionRequest } from "./acp-permissions";
export { commandMatches, commandParts, decidePermission } from "./acp-permissions";
export type { AcpProbe, AcpTurnOptions, AcpTurnState } from "./acp-session";
export { AcpTurn, probeAcpAgent } from "./acp-session";
export type { AcpRefusal } from "./acp-tracker";
export { AcpTracker } from "./acp-tracker";
export type { AdapterRunOptions, AgentAdapter, CommandLine } from "./agent-adapter";
export {
  acpAdapter,
  adapterFor,
  claudeAdapter,
  codexAdapter,
  commandAdapter,
  defaultAcpCommands,
  defaultAgentCommands,
  expandCommand,
  maximumPromptArgumentBytes,
} from "./agent-adapter";
export type { AgentFailure, FailureKind } from "./agent-failure";
export { failureKinds } from "./agent-failure";
export type {
  AgentProgress,
  AgentResultSummary,
  ApiRetry,
  PermissionDenial,
  TokenUsage,
} from "./agent-progress";
export { emptyProgress, snapshotProgress } from "./agent-progress";
export type { AgentRunnerErrorCode } from "./agent-runner-error";
export { AgentRunnerError } from "./agent-runner-error";
export type { RunOutcome } from "./classify-failure";
export { classifyFailure } from "./classify-failure";
export type { ClaudeArgsOptions } from "./claude-args";
export { assertSafeArguments, buildClaudeArgs } from "./claude-args";
export { ClaudeStreamTracker } from "./claude-stream-tracker";
export { describeToolUse } from "./describe-tool-use";
export type { SupervisedExit } from "./exit-supervisor";
export { readSupervisedExit, SUPERVISOR_SOURCE } from "./exit-supervisor";
export type { GitProgress, ProgressCrossCheck, ReportedProgress } from "./git-progress";
export { crossCheckProgress, gitProgress, headSha } from "./git-progress";
export { JsonLinesTracker } from "./json-lines-tracker";
export type { LineSplitterOptions, LineSplitterStats } from "./line-splitter";
export { LineSplitter } from "./line-splitter";
export type { OutputTracker } from "./output-tracker";
export type { MarkedProcess, RunTrace, StopGroupOptions } from "./process-group";
export {
  markedRunProcesses,
  processGroupAlive,
  processGroupMembers,
  runLeftovers,
  sampleRunDescendants,
  signalProcessGroup,
  stopProcessGroup,
  stopRunLeftovers,
} from "./process-group";
export { recordedRunResult } from "./recorded-run";
export type { RetryDecision, RetryPolicyOptions } from "./retry-policy";
export { decideRetry } from "./retry-policy";
export type { AgentRunResult, RunningAgent, StartAgentOptions } from "./start-agent";
export { RUN_MARKER_VARIABLE, startAgent } from "./start-agent";
export { defaultAllowedTools, findUnsafeArgument, restrictionsToDisallowedTools } from "./tool-permissions";

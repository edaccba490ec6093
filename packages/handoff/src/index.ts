export type { Checkpoint } from "./checkpoint-handoff";
export { checkpointToHandoff, parseCheckpoint, timeFromCheckpointName } from "./checkpoint-handoff";
export type { DispatchOptions } from "./handoff-dispatch";
export { dispatchHandoff, dispatchIdFor, handoffToDispatch } from "./handoff-dispatch";
export type { HandoffErrorCode } from "./handoff-error";
export { HandoffError } from "./handoff-error";
export { assertHandoffId, newHandoffId } from "./handoff-id";
export {
  assertResumePromptFits,
  formatHandoff,
  parseHandoffMarkdown,
  readHandoffFields,
} from "./handoff-markdown";
export type { HandoffReference } from "./handoff-reference";
export { checkpointReference, parseHandoffReference } from "./handoff-reference";
export type { HandoffSectionField } from "./handoff-sections";
export { handoffSections } from "./handoff-sections";
export type { HandoffFilter, HandoffProblem, HandoffRecord, NewHandoff, StoreOptions } from "./handoff-store";
export { findLatestHandoff, listHandoffs, pickUpHandoff, readHandoff, writeHandoff } from "./handoff-store";
export type { PromptPart } from "./resume-prompt";
export { composePrompt, resumePromptOf } from "./resume-prompt";

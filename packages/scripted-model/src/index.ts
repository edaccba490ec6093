export type { AnswerOptions, ContentBlock, StreamEvent } from "./messages-stream";
export { answerOf, chunksOf, encodeStreamEvent, messageBodyOf, streamEventsOf } from "./messages-stream";
export type { MessagesRequestBody } from "./request-text";
export { firstUserTextOf, promptTextOf, textOfContent, toolResultCountOf } from "./request-text";
export type { ResponsesAnswerOptions } from "./responses-stream";
export { responseBodyOf, responseItemsOf, responsesEventsOf } from "./responses-stream";
export type {
  ModelApi,
  RecordedRequest,
  RequestKind,
  ScriptedModel,
  ScriptedModelOptions,
  ScriptedResponder,
} from "./scripted-model-server";
export { startScriptedModel } from "./scripted-model-server";
export type {
  ScriptedErrorTurn,
  ScriptedHangTurn,
  ScriptedStep,
  ScriptedTextTurn,
  ScriptedToolUseTurn,
  ScriptedTurn,
} from "./scripted-turn";
export { errorTypeForStatus, scripted } from "./scripted-turn";

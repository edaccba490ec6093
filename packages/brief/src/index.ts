export type {
  Brief,
  BriefOptions,
  BriefTarget,
  CheckpointLine,
  DraftFields,
  DraftSettings,
  LearningLine,
  OpenWork,
  OpenWorkSource,
  OpenWorkState,
  RoutingAdvice,
  SessionLine,
} from "./brief-types";
export type { BriefSources } from "./cli";
export { briefCli, runBriefCli } from "./cli";
export type { DraftInput } from "./draft-dispatch";
export { draftDispatch } from "./draft-dispatch";
export type { AnswerableDrafts, DraftAsker, DraftRoute } from "./draft-route";
export { ANSWER_WINDOW_MS, addressOf, answerableDrafts, sameRoute, shownTo } from "./draft-route";
export type { DraftSender, DraftStore, SendOutcome, UnreadableDraft } from "./draft-store";
export { draftStore } from "./draft-store";
export { ageText, draftText, formatBrief, openWorkText, sessionText } from "./format-brief";
export { gatherBrief } from "./gather-brief";
export type { RecentSessions } from "./recent-sessions";
export { lastProject, recentSessions, sessionLine } from "./recent-sessions";
export type { ProjectMatch } from "./resolve-project";
export { knownProjects, matchProject, slugOfFolder, slugOfName, trustedFolders } from "./resolve-project";
export type { BriefSchedule } from "./schedule";
export { scheduleArguments, scheduledBriefMessage } from "./schedule";

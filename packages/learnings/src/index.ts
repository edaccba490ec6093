export type { AuthoredLearning, AuthoredResult } from "./authored-learning";
export { parseAuthoredLearning } from "./authored-learning";
export { contentFingerprint } from "./content-fingerprint";
export type { LearningsErrorCode } from "./errors";
export { LearningsError } from "./errors";
export type { LockOptions } from "./file-lock";
export { withFileLock } from "./file-lock";
export type { InjectionFinding } from "./injection-screen";
export { screenLearning, screenText } from "./injection-screen";
export type { LearningEntry, LocatedLearning, Location, ReadWarning } from "./learning-entry";
export { identityOf } from "./learning-entry";
export type { AuthoredSection, GeneratedSection, ParsedMemoryFile, SectionProblem } from "./memory-file";
export { parseMemoryFile, renderMemoryFile } from "./memory-file";
export type { DecodedSection, LearningTitle } from "./memory-section";
export { decodeSection, insightFitsBody, parseLearningTitle, renderSection } from "./memory-section";
export type { ParsedLearnings } from "./parse-learnings";
export { parseLearnings } from "./parse-learnings";
export type { ExportPlan } from "./plan-export";
export { planExport } from "./plan-export";
export type { BlockedLearning, ImportPlan, ImportProblem, MemorySource } from "./plan-import";
export { entryFromAuthored, planImport } from "./plan-import";
export type { BridgeOptions, SyncReport } from "./project-sync";
export { exportProject, importProject, syncProject } from "./project-sync";
export {
  countsAcrossProjects,
  DEFAULT_CONFIDENCE,
  effectiveConfidence,
  latestPerIdentity,
} from "./reading-rules";
export type { SearchOptions, SearchOutcome, SearchResult } from "./search-learnings";
export { searchLearnings } from "./search-learnings";
export type { MemoryFileRef } from "./workspace-files";
export { listMemoryFiles, readLearningsFile } from "./workspace-files";

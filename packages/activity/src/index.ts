export type { ActivityErrorCode } from "./activity-error";
export { ActivityError } from "./activity-error";
export type { ActivityFilter } from "./activity-filter";
export { filterNeedles, linePrefilter, matchesFilter, sortByTime } from "./activity-filter";
export type {
  ActivityLog,
  ActivityLogOptions,
  ActivityQuery,
  AppendOptions,
  AppendResult,
  ImportResult,
  QueryResult,
  ReadProblem,
  TimelineImportReport,
} from "./activity-log";
export { createActivityLog, MAX_ENTRY_BYTES } from "./activity-log";
export { formatEntryTable, formatLastSeen, formatShipReport, formatSpan } from "./activity-report";
export type { ActivitySummary, ArtifactSummary, ProjectSummary, SkillSummary } from "./activity-summary";
export { summarizeActivity } from "./activity-summary";
export { parseDateBound } from "./date-input";
export { formatDuration, parseDuration } from "./duration-text";
export { entryIdentity } from "./entry-identity";
export type { ConversionProblem, LocatedTimelineEvent } from "./timeline-entries";
export { timelineToEntries } from "./timeline-entries";
export { listWeeks, weekOfFileName } from "./week-files";
export {
  assertWeekLabel,
  compareWeeks,
  lastWeeks,
  shiftWeek,
  weekEnd,
  weekSpan,
  weekStart,
  weeksBetween,
  weeksOverlapping,
} from "./week-range";

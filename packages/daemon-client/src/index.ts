export type { ApiResponse, ApiTarget } from "./client";
export { ApiUnreachableError, apiRequest } from "./client";
export { reachDaemonApi } from "./local-api";
export type { ReportSections } from "./report-sections";
export { bulletItems, parseReportSections, REPORT_SECTIONS } from "./report-sections";
export * from "./trust/repository";
export * from "./trust/trust";

export type { DoctorLine, InstallContractorOptions } from "./contractor-install";
export { checkContractor, installContractor, uninstallContractor } from "./contractor-install";
export type { ContractorSettings } from "./contractor-settings";
export { resolveContractorSettings } from "./contractor-settings";
export { registerContractor } from "./register-contractor";

export type {
  GatewayAddress,
  GatewayConnection,
  GatewayConnectOptions,
  GatewayRequestOptions,
} from "./gateway-client";
export { connectGateway, GatewayRequestError } from "./gateway-client";
export type { OpenClawGateway, OpenClawGatewayOptions } from "./openclaw-gateway";
export { freePort, startOpenClawGateway } from "./openclaw-gateway";
export type { OpenClawHome } from "./openclaw-home";
export { makeOpenClawHome } from "./openclaw-home";
export { relabelledOpenClaw } from "./relabelled-openclaw";
export type { OpenClawRun, OpenClawRunOptions } from "./run-openclaw";
export { openclawBin, openclawEnv, openclawPackageDir, openclawVersion, runOpenClaw } from "./run-openclaw";

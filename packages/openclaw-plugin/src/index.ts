import "./bundle-dependencies";
import type { OpenClawPluginApi } from "openclaw/plugin-sdk/plugin-entry";
import { definePluginEntry } from "openclaw/plugin-sdk/plugin-entry";
import { registerGstackPlugin } from "./register-plugin";

/** The gstack plugin for OpenClaw: dispatch tools, completion delivery, the signed callback route. */
export default definePluginEntry({
  id: "gstack",
  name: "gstack",
  description:
    "Dispatch coding work to the gstack daemon and get its completion reports back in the session that asked.",
  register(api: OpenClawPluginApi) {
    registerGstackPlugin(api);
  },
});

export type { DeliveredLedger, DeliveryRecord } from "./delivered-ledger";
export { deliveredLedger } from "./delivered-ledger";
export type { PluginSettings } from "./plugin-settings";
export { DEFAULT_CALLBACK_PATH, resolvePluginSettings } from "./plugin-settings";

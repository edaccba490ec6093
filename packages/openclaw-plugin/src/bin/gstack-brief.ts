#!/usr/bin/env node
// The gstack-brief command, bundled with the plugin: the brief reads the dispatch daemon's state and
// settings the way the plugin's gstack_brief tool does. The Node check comes first.
import { startCommand } from "@gstack/contracts/node-support";

startCommand("gstack-brief");
await import("../bundle-dependencies");
const [{ runBriefCli }, { briefOptions }, { resolvePluginSettings }] = await Promise.all([
  import("../../../brief/src/cli"),
  import("../brief-sources"),
  import("../plugin-settings"),
]);
const stateDir = process.env.OPENCLAW_STATE_DIR ?? `${process.env.HOME ?? "."}/.openclaw`;
await runBriefCli((root) => briefOptions(resolvePluginSettings(root ? { gstackHome: root } : {}, stateDir)));

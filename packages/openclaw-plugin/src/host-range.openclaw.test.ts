import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TESTED_OPENCLAW_TEXT } from "@gstack/contracts";
import {
  makeOpenClawHome,
  type OpenClawGateway,
  type OpenClawHome,
  relabelledOpenClaw,
} from "@gstack/openclaw-testbed";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadBudget } from "../../../vitest.load-budget";
import { HOST_RANGE_MARK } from "./host-range";
import { gatewayCall, installPlugin, packPlugin, startOpenClawGateway, waitFor } from "./openclaw-world";

const tools = [
  "gstack_answer",
  "gstack_brief",
  "gstack_cancel",
  "gstack_dispatch",
  "gstack_handoffs",
  "gstack_land",
  "gstack_learnings",
  "gstack_report",
  "gstack_resume_handoff",
  "gstack_send_draft",
  "gstack_shipped",
  "gstack_status",
];
let folder: string;
let home: OpenClawHome;

// The packed plugin installed into the real OpenClaw, whose gateway is run as a later release
// (2026.10.1) would be: the plugin's register runs with the runtime and logger OpenClaw gives
// every plugin, and says so in the gateway's log.
beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), "gstack-host-range-"));
  const tarball = await packPlugin(join(folder, "pack"));
  home = await makeOpenClawHome();
  await installPlugin(home, tarball);
}, loadBudget(300_000));

afterAll(async () => {
  await home?.remove();
  if (folder) await rm(folder, { recursive: true, force: true });
});

/** The pinned OpenClaw reporting 2026.10.1. */
function relabelled(): Promise<string> {
  return relabelledOpenClaw("2026.10.1", join(folder, "relabelled"));
}

describe("the plugin loaded by the real OpenClaw", { timeout: loadBudget(300_000) }, () => {
  // The untested OpenClaw is seen in its gateway alone (no `plugins inspect` of its own: that is
  // another load of OpenClaw's whole module graph): the line once, the service started, and
  // every tool in the gateway's own catalogue. On the tested OpenClaw the log holds no such line:
  // the first test of openclaw-plugin.e2e.test.ts checks that on its gateway, beside what
  // `plugins inspect --runtime` says of the plugin.
  it("says in one line, once in the gateway's log, that another OpenClaw was not tested, starts its service and keeps every tool", async () => {
    const gateway = await startOpenClawGateway({
      home: home.home,
      bin: await relabelled(),
      startTimeoutMs: loadBudget(120_000),
    });
    try {
      // The gateway registers the plugin twice as it starts, and starts the service after both.
      await waitFor(async () => (await gateway.output()).includes("gstack: following") || undefined, 120_000);
      const lines = (await gateway.output()).split("\n").filter((line) => line.includes(HOST_RANGE_MARK));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(
        `${HOST_RANGE_MARK} ${TESTED_OPENCLAW_TEXT}, not with OpenClaw 2026.10.1, which runs it now;`,
      );
      expect(await catalogue(gateway)).toEqual(tools);
    } finally {
      await gateway.stop();
    }
  });
});

/**
 * The gstack tools the running gateway offers its agent (`tools.catalog`), each one the plugin
 * registered: a tool only named in the manifest would carry OpenClaw's stand-in description.
 */
async function catalogue(gateway: OpenClawGateway): Promise<string[]> {
  const answer = await gatewayCall<{
    groups: { pluginId?: string; tools: { id: string; description?: string }[] }[];
  }>(gateway, "tools.catalog", {});
  const offered = answer.groups
    .filter((group) => group.pluginId === "gstack")
    .flatMap((group) => group.tools);
  for (const tool of offered) expect(tool.description, tool.id).not.toMatch(/^Plugin tool from /);
  return offered.map((tool) => tool.id).sort();
}

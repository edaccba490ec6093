import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TESTED_OPENCLAW_TEXT } from "@gstack/contracts";
import {
  makeOpenClawHome,
  type OpenClawGateway,
  type OpenClawHome,
  openclawVersion,
  relabelledOpenClaw,
  runOpenClaw,
  startOpenClawGateway,
} from "@gstack/openclaw-testbed";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadBudget } from "../../../vitest.load-budget";
import { HOST_RANGE_MARK } from "./host-range";
import { gatewayEnv, installPlugin, packPlugin, waitFor } from "./openclaw-world";

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

// The packed plugin installed into the real OpenClaw; `plugins inspect --runtime` loads it (its
// register runs, with the runtime and logger OpenClaw gives every plugin) and prints its log.
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

/** The pinned OpenClaw reporting 2026.10.1, made once for the tests that need it. */
let relabelledBin: Promise<string> | undefined;
function relabelled(): Promise<string> {
  relabelledBin ??= relabelledOpenClaw("2026.10.1", join(folder, "relabelled"));
  return relabelledBin;
}

/** Loads the plugin into the given OpenClaw: what it logged, its status and its tools. */
async function load(bin?: string) {
  const inspected = await runOpenClaw(["plugins", "inspect", "gstack", "--runtime"], {
    home: home.home,
    timeoutMs: loadBudget(120_000),
    ...(bin ? { bin } : {}),
  });
  expect(inspected.code, inspected.stdout + inspected.stderr).toBe(0);
  const printed = `${inspected.stdout}\n${inspected.stderr}`.replace(/\x1b\[[0-9;]*m/g, "");
  const toolList = /^Tools:\n((?:gstack_\w+\n)+)/m.exec(printed)?.[1] ?? "";
  return {
    hostLines: printed.split("\n").filter((line) => line.includes(HOST_RANGE_MARK)),
    status: /^Status: (\w+)/m.exec(printed)?.[1],
    tools: toolList.trim().split("\n").sort(),
  };
}

describe("the plugin loaded by the real OpenClaw", { timeout: loadBudget(300_000) }, () => {
  it(`says nothing of its host range on the tested OpenClaw (${openclawVersion})`, async () => {
    // The line is also logged when api.runtime.version is missing: its absence shows the real
    // runtime gives the version, and that it is a tested one.
    expect(await load()).toEqual({ hostLines: [], status: "loaded", tools });
  });

  // The untested OpenClaw is seen in its gateway alone (no `plugins inspect` of its own: that is
  // another load of OpenClaw's whole module graph): the line once, the service started, and
  // every tool in the gateway's own catalogue.
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
  const call = await runOpenClaw(
    ["gateway", "call", "tools.catalog", "--params", "{}", "--json", "--timeout", String(loadBudget(30_000))],
    { home: home.home, env: gatewayEnv(gateway), timeoutMs: loadBudget(60_000) },
  );
  expect(call.code, call.stdout + call.stderr).toBe(0);
  const answer = JSON.parse(call.stdout) as {
    groups: { pluginId?: string; tools: { id: string; description?: string }[] }[];
  };
  const offered = answer.groups
    .filter((group) => group.pluginId === "gstack")
    .flatMap((group) => group.tools);
  for (const tool of offered) expect(tool.description, tool.id).not.toMatch(/^Plugin tool from /);
  return offered.map((tool) => tool.id).sort();
}

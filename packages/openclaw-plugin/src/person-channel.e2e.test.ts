import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type OpenClawGateway, type OpenClawHome, runOpenClaw } from "@gstack/openclaw-testbed";
import { type ScriptedModel, scripted, startScriptedModel } from "@gstack/scripted-model";
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { DISPATCH_MARKER, newestUserText, openclawAgentResponder, TOOL_MARKER } from "./openclaw-scripts";
import {
  agentTurn,
  dispatchFromChat,
  failureReport,
  type GstackWorld,
  gatewayEnv,
  installPlugin,
  makeGstackWorld,
  makeOpenClawHome,
  packPlugin,
  planThenExecuteScript,
  runCodingDaemonUntilDone,
  scriptedOpenClawConfig,
  startCodingDaemon,
  startOpenClawGateway,
  waitFor,
} from "./openclaw-world";
import { reportMarker } from "./report-outbox";

let scratch: string;
let world: GstackWorld;
let model: ScriptedModel;
let home: OpenClawHome;
let gateway: OpenClawGateway;
let sentFile: string;

/** A tiny OpenClaw channel whose outbound adapter appends every message it is given to a file. */
async function writeRecordingChannel(folder: string, file: string) {
  await mkdir(folder, { recursive: true });
  await writeFile(
    join(folder, "package.json"),
    JSON.stringify({
      name: "recording-chat",
      version: "1.0.0",
      type: "module",
      openclaw: {
        extensions: ["./index.js"],
        channel: { id: "recording-chat", label: "Recording chat", blurb: "Records outbound messages." },
      },
    }),
  );
  await writeFile(
    join(folder, "openclaw.plugin.json"),
    JSON.stringify({
      id: "recording-chat",
      name: "Recording chat",
      description: "Records outbound messages to a file.",
      channels: ["recording-chat"],
      activation: { onStartup: true },
      configSchema: { type: "object", additionalProperties: true, properties: {} },
      channelConfigs: {
        "recording-chat": { schema: { type: "object", additionalProperties: true, properties: {} } },
      },
    }),
  );
  await writeFile(
    join(folder, "index.js"),
    `import { appendFileSync } from "node:fs";
const FILE = ${JSON.stringify(file)};
const plugin = {
  id: "recording-chat",
  meta: { id: "recording-chat", label: "Recording chat", selectionLabel: "Recording chat", docsPath: "/channels/recording-chat", blurb: "Records outbound messages." },
  capabilities: { chatTypes: ["direct"] },
  config: {
    listAccountIds: () => ["default"],
    resolveAccount: () => ({ accountId: "default", enabled: true, configured: true }),
    inspectAccount: () => ({ enabled: true, configured: true }),
    isConfigured: () => true,
  },
  outbound: {
    deliveryMode: "direct",
    sendText: async (ctx) => {
      const messageId = "m-" + Date.now() + "-" + Math.random().toString(36).slice(2);
      appendFileSync(FILE, JSON.stringify({ to: ctx.to, text: ctx.text, messageId }) + "\\n");
      return { channel: "recording-chat", messageId };
    },
  },
};
export default {
  id: "recording-chat",
  name: "Recording chat",
  register(api) {
    api.registerChannel({ plugin });
    // What this channel's inbound handling does for a message from a person: record the
    // session's last route, so replies and reports go back to that person.
    api.registerGatewayMethod("recording-chat.inbound", async ({ params, respond }) => {
      try {
        const storePath = api.runtime.agent.session.resolveStorePath(api.config.session?.store, { agentId: "main" });
        await api.runtime.channel.session.updateLastRoute({
          storePath,
          sessionKey: params.sessionKey,
          channel: "recording-chat",
          deliveryContext: { channel: "recording-chat", to: params.from },
          createIfMissing: true,
        });
        respond(true, { ok: true });
      } catch (error) {
        respond(false, undefined, { code: "UNAVAILABLE", message: String(error && error.stack || error) });
      }
    });
  },
};
`,
  );
}

const SESSION = "agent:main:person";

async function sentMessages(): Promise<{ to: string; text: string }[]> {
  const text = await readFile(sentFile, "utf8").catch(() => "");
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

function runDaemonUntilDone(id: string): Promise<void> {
  return runCodingDaemonUntilDone(
    world,
    [
      scripted.write("quiet.txt", "quiet\n"),
      scripted.bash("git add quiet.txt"),
      scripted.bash("git commit -m 'Add quiet.txt'"),
      scripted.text(
        "Added quiet.txt.\n## What shipped\n- quiet.txt QUIET-SHIPPED\n## Needs human judgment\n- none",
      ),
    ],
    id,
  );
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "gstack-person-"));
  sentFile = join(scratch, "sent.jsonl");
  const tarball = await packPlugin(join(scratch, "pack"));
  world = await makeGstackWorld();
  // The session's agent dispatches (or calls a tool) when asked to and answers every report with NO_REPLY.
  model = await startScriptedModel({
    respond: (request) => {
      const fresh = newestUserText(request);
      if (fresh.includes(DISPATCH_MARKER) || fresh.includes(TOOL_MARKER) || fresh.includes("Anything new?"))
        return openclawAgentResponder(request);
      if (fresh.includes("(report key ")) return scripted.text("NO_REPLY");
      return openclawAgentResponder(request);
    },
  });
  const config = scriptedOpenClawConfig(model, { gstackHome: world.root }) as Record<string, unknown>;
  home = await makeOpenClawHome(config);
  const channelDir = join(scratch, "recording-chat");
  await writeRecordingChannel(channelDir, sentFile);
  const install = await runOpenClaw(["plugins", "install", channelDir, "--force", "--accept-capabilities"], {
    home: home.home,
  });
  if (install.code !== 0)
    throw new Error(`installing the recording channel failed:\n${install.stdout}\n${install.stderr}`);
  const enable = await runOpenClaw(["plugins", "enable", "recording-chat"], { home: home.home });
  if (enable.code !== 0)
    throw new Error(`enabling the recording channel failed:\n${enable.stdout}\n${enable.stderr}`);
  await installPlugin(home, tarball);
  gateway = await startOpenClawGateway({ home: home.home });
}, 300_000);

afterAll(async () => {
  await gateway?.stop();
  await model?.close();
  await home?.remove();
  await world?.remove();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

beforeEach(({ onTestFailed }) => {
  onTestFailed(async () => console.error(await failureReport(gateway, world)));
});

it("sends the report to the person's channel once, though the agent answers NO_REPLY", async () => {
  const env = {
    OPENCLAW_GATEWAY_URL: `ws://127.0.0.1:${gateway.port}`,
    OPENCLAW_GATEWAY_TOKEN: gateway.token,
  };
  const bind = await runOpenClaw(
    [
      "gateway",
      "call",
      "recording-chat.inbound",
      "--params",
      JSON.stringify({ sessionKey: SESSION, from: "person-1" }),
      "--json",
    ],
    { home: home.home, env },
  );
  expect(bind.code, `${bind.stdout}\n${bind.stderr}`).toBe(0);

  const before = new Set(await readdir(world.layout.dispatch.incoming).catch(() => []));
  const args = { task: "Add quiet.txt and commit it", project: "acme-widget", project_dir: world.repo };
  const turn = await agentTurn(
    home,
    gateway,
    SESSION,
    `Please do this. ${DISPATCH_MARKER}${JSON.stringify(args)}`,
  );
  expect(turn.code, turn.stderr).toBe(0);
  const added = (await readdir(world.layout.dispatch.incoming)).filter(
    (name) => name.endsWith(".json") && !before.has(name),
  );
  expect(added).toHaveLength(1);
  const dispatch = JSON.parse(
    await readFile(join(world.layout.dispatch.incoming, added[0] as string), "utf8"),
  );
  const id = dispatch.id as string;

  await runDaemonUntilDone(id);
  const marker = reportMarker(`gstack:${id}:completed`);
  const delivered = join(home.stateDir, "gstack", "delivered", `${id}.json`);
  await waitFor(() => stat(delivered).catch(() => undefined), 150_000);
  // The agent was given the report and said nothing for the person.
  const reportTurns = model.agentRequests().filter((request) => newestUserText(request).includes(marker));
  expect(reportTurns.length).toBeGreaterThan(0);
  const sent = await sentMessages();
  const withReport = sent.filter((message) => message.text.includes(marker));
  if (withReport.length !== 1)
    console.error(
      JSON.stringify(sent),
      await readFile(delivered, "utf8"),
      (await gateway.output()).slice(-5000),
    );
  expect(withReport).toHaveLength(1);
  expect(withReport[0]?.to).toBe("person-1");
  expect(withReport[0]?.text).toContain(`gstack dispatch ${id} (acme-widget) finished.`);
  expect(withReport[0]?.text).toContain("QUIET-SHIPPED");
  expect(JSON.parse(await readFile(delivered, "utf8")).person).toBe("sent");

  // A restart of the gateway sends nothing again.
  await gateway.stop();
  gateway = await startOpenClawGateway({ home: home.home });
  await agentTurn(home, gateway, SESSION, "Anything new?");
  expect((await sentMessages()).filter((message) => message.text.includes(marker))).toHaveLength(1);
}, 600_000);

it("sends a waiting plan to the person's channel once, and after their answer the final report once", async () => {
  const session = "agent:main:person-plan";
  const env = gatewayEnv(gateway);
  const bind = await runOpenClaw(
    [
      "gateway",
      "call",
      "recording-chat.inbound",
      "--params",
      JSON.stringify({ sessionKey: session, from: "person-2" }),
      "--json",
    ],
    { home: home.home, env },
  );
  expect(bind.code, `${bind.stdout}\n${bind.stderr}`).toBe(0);
  const dispatch = await dispatchFromChat(
    home,
    gateway,
    world,
    { task: "Add told.txt and commit it", project: "acme-widget", project_dir: world.repo, mode: "plan" },
    session,
  );
  const id = dispatch.id as string;
  const coding = await startCodingDaemon(
    world,
    planThenExecuteScript("told.txt", "PLAN-TOLD", "SHIPPED-TOLD"),
  );
  try {
    const planMarker = reportMarker(`gstack:${id}:awaiting:1`);
    const planDelivered = join(home.stateDir, "gstack", "delivered", `${id}.awaiting-1.json`);
    await waitFor(() => stat(planDelivered).catch(() => undefined), 150_000);
    // The agent said NO_REPLY to it; the person got the plan and how to answer all the same.
    const plans = (await sentMessages()).filter((message) => message.text.includes(planMarker));
    expect(plans).toHaveLength(1);
    expect(plans[0]?.to).toBe("person-2");
    expect(plans[0]?.text).toContain("PLAN-TOLD");
    expect(plans[0]?.text).toContain(`gstack_answer with dispatch_id ${id}, answer approve, round 1`);
    expect(JSON.parse(await readFile(planDelivered, "utf8")).person).toBe("sent");

    // The person's answer, in their session: the agent approves with the plugin's tool.
    const approve = { id: "gstack_answer", args: { dispatch_id: id, answer: "approve", round: 1 } };
    const turn = await agentTurn(
      home,
      gateway,
      session,
      `Go ahead. ${TOOL_MARKER}${JSON.stringify(approve)}`,
    );
    expect(turn.code, turn.stderr).toBe(0);
    // The approved plan's run is a round of its first attempt: the key names no attempt.
    const finalMarker = reportMarker(`gstack:${id}:completed`);
    await waitFor(
      () => stat(join(home.stateDir, "gstack", "delivered", `${id}.json`)).catch(() => undefined),
      180_000,
    );
    const sent = await sentMessages();
    expect(sent.filter((message) => message.text.includes(finalMarker))).toHaveLength(1);
    expect(sent.filter((message) => message.text.includes("SHIPPED-TOLD"))).toHaveLength(1);
    expect(sent.filter((message) => message.text.includes(planMarker))).toHaveLength(1);
  } finally {
    await coding.stop();
  }
}, 600_000);

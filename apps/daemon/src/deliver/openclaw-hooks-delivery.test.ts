import { type ChildProcess, spawn } from "node:child_process";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { resolveDispatchSettings } from "@gstack/contracts";
import { makeOpenClawHome, type OpenClawHome, openclawBin, openclawEnv } from "@gstack/openclaw-testbed";
import { type ScriptedModel, scripted, startScriptedModel } from "@gstack/scripted-model";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import { waitFor } from "../test-support";
import {
  type DeliveryWorld,
  freePort,
  HOOKS_TOKEN,
  makeDeliveryWorld,
  SAMPLE_REPORT,
  sampleCompletion,
  sampleDispatch,
} from "./delivery-test-support";
import { createCompletionDelivery } from "./outbox-delivery";
import { completionMessage, hooksBody } from "./receiver-body";

// One real OpenClaw gateway for the whole file: hooks enabled, the test's hooks token, and its
// agent answering from a local scripted model, so a test can see what the agent was given.
let home: OpenClawHome;
let model: ScriptedModel;
let gateway: ChildProcess;
let base: string;
let world: DeliveryWorld;

beforeAll(async () => {
  model = await startScriptedModel({ script: [scripted.text("Noted.", { times: 100 })] });
  home = await makeOpenClawHome({
    gateway: { mode: "local" },
    hooks: { enabled: true, token: HOOKS_TOKEN },
    models: {
      providers: {
        scripted: {
          baseUrl: model.url,
          api: "anthropic-messages",
          apiKey: "placeholder",
          models: [{ id: "scripted-model", name: "scripted-model" }],
        },
      },
    },
    agents: { defaults: { model: { primary: "scripted/scripted-model" } } },
  });
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const log = await open(join(home.home, "gateway.log"), "w");
  gateway = spawn(
    process.execPath,
    [openclawBin(), "gateway", "run", "--bind", "loopback", "--port", String(port)],
    {
      cwd: home.home,
      env: openclawEnv(home.home),
      stdio: ["ignore", log.fd, log.fd],
    },
  );
  await log.close();
  // Ready when the hooks route answers (401 without a token).
  await waitFor(async () => {
    const response = await fetch(`${base}/hooks/wake`, { method: "POST", body: "{}" }).catch(() => undefined);
    return response?.status === 401 ? true : undefined;
  }, 90_000);
  world = await makeDeliveryWorld();
}, 120_000);

afterAll(async () => {
  if (gateway.exitCode === null) {
    const exited = new Promise((resolve) => gateway.once("exit", resolve));
    gateway.kill("SIGTERM");
    const timer = setTimeout(() => gateway.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(timer);
  }
  await home.remove();
  await model.close();
  await world?.cleanup();
});

async function postOnce(path: string, body: unknown): Promise<{ status: number; json: unknown }> {
  const response = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${HOOKS_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  let json: unknown = text;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: response.status, json };
}

/**
 * POSTs to the gateway. A 503 is the gateway saying "not now" (its hook admission timed out
 * while a loaded machine was busy), so the request is sent again until the gateway takes it or
 * a minute has passed; every answer keeps its body, so an assertion on it shows the refusal.
 */
async function post(path: string, body: unknown): Promise<{ status: number; json: unknown }> {
  let last = await postOnce(path, body);
  const deadline = Date.now() + 60_000;
  while (last.status === 503 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    last = await postOnce(path, body);
  }
  return last;
}

describe("delivery to the real OpenClaw gateway's hooks endpoint", { timeout: loadBudget(60_000) }, () => {
  const completion = sampleCompletion("dispatch-openclaw-1", {
    status: "failed",
    error: "429 rate limited by the model provider",
    error_kind: "rate_limit",
  });
  const message = completionMessage(
    completion,
    SAMPLE_REPORT,
    "/state/dispatch/completed/dispatch-openclaw-1.md",
  );

  it("accepts the message body on /hooks/agent and /hooks/wake, and refuses a raw completion with 400", async () => {
    // Whole answers are compared, so a refusal shows its body.
    const agent = await post("/hooks/agent", hooksBody(`${base}/hooks/agent`, message));
    expect(agent).toMatchObject({ status: 200, json: { ok: true } });
    const wake = await post("/hooks/wake", hooksBody(`${base}/hooks/wake`, message));
    expect(wake).toMatchObject({ status: 200, json: { ok: true, mode: "now" } });
    const raw = await post("/hooks/agent", completion);
    expect(raw).toMatchObject({ status: 400 });
    expect(message).toContain("Failure: rate_limit: 429 rate limited by the model provider");
    expect(message).toContain("What to do: wait until the model's rate limit resets");
  });

  for (const path of ["/hooks/agent", "/hooks/wake"]) {
    it(`checks ${path} at start and delivers a completion to it`, async () => {
      const id = `dispatch-openclaw-${path.endsWith("wake") ? "wake" : "agent"}`;
      const delivery = createCompletionDelivery({
        layout: world.layout,
        settings: resolveDispatchSettings({ dispatch: { openclaw_hooks_url: `${base}${path}` } }).settings,
        context: world.context,
      });
      const [check] = await delivery.start();
      expect(check).toMatchObject({
        reachable: true,
        detail: "answers (HTTP 401 to an unauthenticated probe)",
      });
      await delivery.enqueue({
        sessionDir: world.sessionDir(id),
        dispatch: sampleDispatch(id),
        completion: sampleCompletion(id),
        reportMarkdown: SAMPLE_REPORT,
      });
      const sent = await waitFor(() =>
        world.events.find((event) => event.event === "callback_sent" && event.dispatch_id === id),
      );
      expect(sent.detail).toMatchObject({ receiver: "openclaw-hooks", attempts: 1 });
      expect(delivery.status().failed).toEqual([]);
      if (path === "/hooks/agent") {
        // The agent turn OpenClaw started was given the report: the model saw every judgment item.
        const request = await waitFor(
          () =>
            model
              .agentRequests()
              .find((candidate) => candidate.promptText.includes(`gstack dispatch ${id} completed`)),
          60_000,
        );
        expect(request.promptText).toContain("Should the limit be per IP or per account?");
        expect(request.promptText).toContain("The staging key is expired");
        expect(request.promptText).toContain("PR: acme/widget#47");
      }
      await delivery.stop(1000);
    });
  }
});

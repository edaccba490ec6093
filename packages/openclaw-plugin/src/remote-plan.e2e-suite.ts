import { execFileSync } from "node:child_process";
import { chmod, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type AnswerAnswer, type Completion, parseJson } from "@gstack/contracts";
import { apiRequest, reachDaemonApi, submitDispatch } from "@gstack/daemon-client";
import type { OpenClawGateway, OpenClawHome } from "@gstack/openclaw-testbed";
import type { ScriptedModel } from "@gstack/scripted-model";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../vitest.load-budget";
import { awaitingKey } from "./awaiting-message";
import { completionKey } from "./completion-message";
import { newestUserText, TOOL_MARKER } from "./openclaw-scripts";
import {
  agentTurn,
  chatHistory,
  failureReport,
  type GstackWorld,
  makeGstackWorld,
  planThenExecuteScript,
  startCodingDaemon,
  waitFor,
} from "./openclaw-world";
import type { SharedGateway } from "./real-gateway-world";
import { reportMarker } from "./report-outbox";

const SESSION = "agent:main:remote-plan";
const CALLBACK_SECRET = "remote-plan-secret-0123456789abcdef";

/** The other host: the daemon's gstack root and the repository it works in. */
let daemonHost: GstackWorld;
let openclawModel: ScriptedModel;
let home: OpenClawHome;
let gateway: OpenClawGateway;

async function writeSecret(world: GstackWorld): Promise<void> {
  await writeFile(world.layout.callbackSecret, CALLBACK_SECRET, { mode: 0o600 });
  await chmod(world.layout.callbackSecret, 0o600);
}

/** Model requests of the OpenClaw agent whose turn is about `needle`. */
const turnsAbout = (needle: string) =>
  openclawModel.agentRequests().filter((request) => newestUserText(request).includes(needle));

/** User-side messages of the session's history holding `needle`: a report shows once. */
async function inHistory(needle: string): Promise<number> {
  const history = await chatHistory(gateway, SESSION);
  return history.filter((message) => message.role !== "assistant" && message.text.includes(needle)).length;
}

const delivered = (slot: string) =>
  stat(join(home.stateDir, "gstack", "delivered", `${slot}.json`)).catch(() => undefined);

/**
 * A daemon on another host: its own gstack root and repository, which the plugin's folder
 * followers (on the gateway's host, the shared world's root) never see. Nothing it writes can
 * reach the session except through the signed route, with the secret both hosts hold.
 */
export function remotePlanSuite(shared: SharedGateway): void {
  describe("a plan from a daemon on another host", { timeout: loadBudget(600_000) }, () => {
    beforeAll(async () => {
      shared.respondWith();
      ({ model: openclawModel, home, gateway } = shared.real);
      daemonHost = await makeGstackWorld();
      await writeSecret(shared.real.world);
      await writeSecret(daemonHost);
    });
    afterAll(async () => {
      await daemonHost?.remove();
    });
    beforeEach(({ onTestFailed }) => {
      onTestFailed(async () => {
        if (daemonHost) console.error(await failureReport(gateway, daemonHost));
      });
    });

    it("reaches the session once through the signed route; approved on the daemon's host, the report follows once", async () => {
      const id = "dispatch-remote-plan-e2e";
      const coding = await startCodingDaemon(
        daemonHost,
        planThenExecuteScript("remote-plan.txt", "PLAN-REMOTE", "SHIPPED-REMOTE"),
        { openclaw_callback_url: `${gateway.url}/gstack/completion` },
      );
      try {
        await submitDispatch(daemonHost.layout, {
          id,
          dispatched_by: "openclaw",
          task: "Add remote-plan.txt and commit it",
          project: "acme-widget",
          project_dir: daemonHost.repo,
          mode: "plan",
          reply_to: { runtime: "openclaw", session_key: SESSION },
        });

        // The plan arrives in the session that asked, by the route alone, with an honest way to answer.
        const planTurn = await waitFor(
          () => turnsAbout("PLAN-REMOTE")[0],
          150_000,
          "the plan in the session",
        );
        const planText = newestUserText(planTurn);
        expect(planText).toContain(`gstack dispatch ${id} (acme-widget) has a plan and waits`);
        expect(planText).toContain("gstack_answer reaches only a gstack daemon on this host");
        expect(planText).toContain(`gstack-dispatch answer ${id} approve`);
        await waitFor(() => delivered(`${id}.awaiting-1`), 60_000, "the plan recorded as delivered");
        expect(await inHistory(reportMarker(awaitingKey({ dispatch_id: id, round: 1 })))).toBe(1);
        const outbox = JSON.parse(
          await readFile(join(daemonHost.layout.dispatch.sessionDir(id), "awaiting-delivery.json"), "utf8"),
        ) as { state: string };
        expect(outbox.state).toBe("delivered");

        // gstack_answer from this host cannot reach that daemon, and says where to answer instead.
        const call = { id: "gstack_answer", args: { dispatch_id: id, answer: "approve", round: 1 } };
        const turn = await agentTurn(gateway, SESSION, `Yes, do it. ${TOOL_MARKER}${JSON.stringify(call)}`);
        expect(turn.code, turn.stderr).toBe(0);
        const refusal = openclawModel
          .agentRequests()
          .map((request) => JSON.stringify(request.body))
          .find(
            (body) => body.includes("tool_result") && body.includes("no gstack daemon answers on this host"),
          );
        expect(refusal, "the gstack_answer refusal in the agent's conversation").toContain(
          `gstack-dispatch answer ${id} approve --round 1`,
        );

        // The person approves on the daemon's host (the service API, as gstack-dispatch answer does).
        const api = await reachDaemonApi(daemonHost.layout);
        if (!api) throw new Error("the daemon's service API is not reachable on its host");
        const accepted = await apiRequest(api, "POST", "/v1/answer", {
          body: JSON.stringify({ dispatch_id: id, answer: "approve", round: 1 }),
        });
        expect(accepted.status).toBe(200);
        expect(accepted.body as AnswerAnswer).toMatchObject({ answer: "approve", round: 1 });

        const completionPath = daemonHost.layout.dispatch.completedJson(id);
        const completion = await waitFor(
          () =>
            readFile(completionPath, "utf8").then(
              (text) => parseJson("completion", text, { source: completionPath }) as Completion,
              () => undefined,
            ),
          150_000,
          `the completion of ${id}`,
        );
        expect(completion).toMatchObject({ status: "completed", commits: 1, branch: `gstack/${id}` });
        await waitFor(() => delivered(id), 120_000, `the final report of ${id} in the session`);
        expect(turnsAbout("SHIPPED-REMOTE")).toHaveLength(1);
        expect(await inHistory(reportMarker(completionKey(completion)))).toBe(1);
        // The plan was posted once on the whole way.
        expect(turnsAbout("PLAN-REMOTE")).toHaveLength(1);
        expect(await inHistory(reportMarker(awaitingKey({ dispatch_id: id, round: 1 })))).toBe(1);
        expect(
          execFileSync("git", ["-C", daemonHost.repo, "log", "--format=%s", `gstack/${id}`], {
            encoding: "utf8",
          }),
        ).toMatch(/^Add remote-plan.txt\n/);
      } finally {
        await coding.stop();
      }
    });
  });
}

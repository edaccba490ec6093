import { stat } from "node:fs/promises";
import { join } from "node:path";
import { submitDispatch } from "@gstack/daemon-client";
import type { OpenClawGateway, OpenClawHome } from "@gstack/openclaw-testbed";
import { type ScriptedModel, scripted } from "@gstack/scripted-model";
import { beforeAll, describe, expect, it } from "vitest";
import { newestUserText } from "./openclaw-scripts";
import { type GstackWorld, sessionHistory, startCodingDaemon, waitFor } from "./openclaw-world";
import type { SharedGateway } from "./real-gateway-world";
import { reportMarker } from "./report-outbox";

const SESSION = "agent:main:burst";
const COUNT = 25;
/** OpenClaw keeps at most this many queued events per session. */
const OPENCLAW_SESSION_QUEUE = 20;

let world: GstackWorld;
let model: ScriptedModel;
let home: OpenClawHome;
let gateway: OpenClawGateway;

/** The burst's test, on the gateway the suites share; the OpenClaw agent notes each report. */
export function reportBurstSuite(shared: SharedGateway): void {
  describe("a burst of reports from one session", () => {
    beforeAll(() => {
      shared.respondWith(() => scripted.text("Noted."));
      ({ world, model, home, gateway } = shared.real);
    });

    it(`shows ${COUNT} reports from one session, each once, in turns of at most ten`, async () => {
      // A trivial coder: the real Claude Code CLI answering each task with one line.
      const ids = Array.from(
        { length: COUNT },
        (_, index) => `dispatch-burst-${String(index + 1).padStart(2, "0")}`,
      );
      const coding = await startCodingDaemon(world, { finalText: "Looked at it; nothing to change." });
      try {
        for (const id of ids) {
          await submitDispatch(world.layout, {
            id,
            dispatched_by: "openclaw",
            task: `Look at the README (${id})`,
            project: "acme-widget",
            project_dir: world.repo,
            reply_to: { runtime: "openclaw", session_key: SESSION },
          });
        }
        const delivered = (id: string) =>
          stat(join(home.stateDir, "gstack", "delivered", `${id}.json`)).then(
            () => true,
            () => false,
          );
        await waitFor(
          async () => (await Promise.all(ids.map(delivered))).every(Boolean) || undefined,
          900_000,
        );
      } finally {
        await coding.stop();
      }

      const messages = ((await sessionHistory(gateway, SESSION)).messages ?? []) as {
        role?: string;
        content?: unknown;
      }[];
      const userTexts = messages
        .filter((message) => message.role === "user")
        .map((message) => JSON.stringify(message.content));
      const turns = model.agentRequests().map((request) => newestUserText(request));
      for (const id of ids) {
        const marker = reportMarker(`gstack:${id}:completed`);
        // Shown once in the session's history and given to the agent in exactly one turn.
        expect(
          userTexts.filter((text) => text.includes(marker)),
          id,
        ).toHaveLength(1);
        expect(
          turns.filter((text) => text.includes(marker)),
          id,
        ).toHaveLength(1);
      }
      // Never more in one turn than the batch, far below OpenClaw's per-session queue.
      const reportTurns = turns.filter((text) => text.includes("(report key gstack:"));
      for (const text of reportTurns) {
        const count = text.split("(report key gstack:").length - 1;
        expect(count).toBeLessThanOrEqual(10);
        expect(count).toBeLessThan(OPENCLAW_SESSION_QUEUE);
      }
      expect(reportTurns.length).toBeGreaterThanOrEqual(Math.ceil(COUNT / 10));
      console.log(`${COUNT} reports in ${reportTurns.length} turns`);
    }, 1_200_000);
  });
}

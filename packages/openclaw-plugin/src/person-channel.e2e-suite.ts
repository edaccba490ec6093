import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import type { OpenClawGateway, OpenClawHome } from "@gstack/openclaw-testbed";
import { type ScriptedModel, type ScriptedResponder, scripted } from "@gstack/scripted-model";
import { beforeAll, describe, expect, it } from "vitest";
import {
  DISPATCH_MARKER,
  newestUserText,
  openclawAgentResponder,
  plainReplyResponder,
  TOOL_MARKER,
} from "./openclaw-scripts";
import {
  agentTurn,
  bindRecordingPerson,
  chatHistory,
  dispatchFromChat,
  type GstackWorld,
  planThenExecuteScript,
  runCodingDaemonUntilDone,
  startCodingDaemon,
  startOpenClawGateway,
  waitFor,
} from "./openclaw-world";
import { recordedMessages, recordedMessagesFile, type SharedGateway } from "./real-gateway-world";
import { reportMarker } from "./report-outbox";

let world: GstackWorld;
let model: ScriptedModel;
let home: OpenClawHome;
let gateway: OpenClawGateway;
let sentFile: string;

/** What the report's turn answers, by a needle of the report's text; NO_REPLY when none matches. */
const answers = new Map<string, string>();
/** Needles whose turns hang, so the gateway can be killed inside them (once each). */
const holds = new Set<string>();

const sentMessages = () => recordedMessages(sentFile);

type Script = Parameters<typeof startCodingDaemon>[1];

function shipScript(file: string, needle: string): Script {
  return [
    scripted.write(file, `${needle}\n`),
    scripted.bash(`git add ${file}`),
    scripted.bash(`git commit -m 'Add ${file}'`),
    scripted.text(`Added ${file}.\n## What shipped\n- ${file} ${needle}\n## Needs human judgment\n- none`),
  ];
}

/** The session's person is on the recording channel: their messages arrive from `to`. */
async function bindPerson(session: string, to: string): Promise<void> {
  await bindRecordingPerson(gateway, session, to);
}

/** What a person must never be sent: the agent's tools, report keys, JSON, OpenClaw's errors. */
function expectForAPerson(text: string, id: string): void {
  expect(text).not.toMatch(/gstack_(answer|land|report|dispatch|status|cancel)/);
  expect(text).not.toContain("report key");
  expect(text).not.toContain(id);
  expect(text).not.toMatch(/\{\s*"/);
  expect(text).not.toContain("couldn't generate a response");
}

/** The notice OpenClaw 2026.9.6 sends a person whose interrupted turn it resumes after a restart. */
const OPENCLAW_RESTART_NOTICE =
  "I'm continuing your interrupted request now (the gateway has just restarted).";

const delivered = (slot: string) =>
  stat(join(home.stateDir, "gstack", "delivered", `${slot}.json`)).catch(() => undefined);

async function sentTo(person: string) {
  return (await sentMessages()).filter((message) => message.to === person);
}

// The session's agent dispatches (or calls a tool) when asked to, turns the person's plain
// replies into the calls the gstack messages spell out, and answers a report as the test
// says (NO_REPLY unless told otherwise); a report whose needle is held never gets an answer.
const respond: ScriptedResponder = (request) => {
  const fresh = newestUserText(request);
  if (fresh.includes(DISPATCH_MARKER) || fresh.includes(TOOL_MARKER) || fresh.includes("Anything new?"))
    return openclawAgentResponder(request);
  const plain = plainReplyResponder(request);
  if (plain) return plain;
  for (const needle of holds) {
    if (fresh.includes(needle)) return { type: "hang" };
  }
  if (fresh.includes("(report key ") || fresh.includes("one more look")) {
    for (const [needle, answer] of answers) if (fresh.includes(needle)) return scripted.text(answer);
    return scripted.text("NO_REPLY");
  }
  return openclawAgentResponder(request);
};

/** The person's side on the shared gateway: the recording channel and its messages. */
export function personChannelSuite(shared: SharedGateway): void {
  describe("a person on a chat channel", () => {
    beforeAll(() => {
      shared.respondWith(respond);
      ({ world, model, home, gateway } = shared.real);
      sentFile = recordedMessagesFile(shared.real.scratch);
    });

    it("a plain dispatch: one message, in the person's words, though the agent answers NO_REPLY", async () => {
      const session = "agent:main:person";
      await bindPerson(session, "person-1");
      const dispatch = await dispatchFromChat(
        gateway,
        world,
        { task: "Add quiet.txt and commit it", project: "acme-widget", project_dir: world.repo },
        session,
      );
      const id = dispatch.id as string;
      await runCodingDaemonUntilDone(world, shipScript("quiet.txt", "QUIET-SHIPPED"), id);
      await waitFor(() => delivered(id), 150_000, "the report recorded as delivered");
      // The agent was given the report, told the person had it, and said nothing for the person.
      const marker = reportMarker(`gstack:${id}:completed`);
      const reportTurns = model.agentRequests().filter((request) => newestUserText(request).includes(marker));
      expect(reportTurns.length).toBeGreaterThan(0);
      expect(newestUserText(reportTurns[0] as never)).toContain("Answer exactly NO_REPLY unless");
      const sent = await sentTo("person-1");
      expect(sent).toHaveLength(1);
      const text = sent[0]?.text ?? "";
      expect(text.split("\n")[0]).toBe("Ready to land: acme-widget, “Add quiet.txt and commit it”.");
      expect(text).toContain("quiet.txt QUIET-SHIPPED");
      expect(text).toContain("Reply “land” to bring the work");
      expectForAPerson(text, id);
      const record = JSON.parse(
        await readFile(join(home.stateDir, "gstack", "delivered", `${id}.json`), "utf8"),
      );
      expect(record).toMatchObject({ person: "sent", answer: "silent" });
    }, 600_000);

    it("a plan approved by a plain reply: the plan once, 'approve' resumes it, the final report once, 'land it' lands it", async () => {
      const session = "agent:main:person-plan";
      await bindPerson(session, "person-2");
      const dispatch = await dispatchFromChat(
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
        await waitFor(() => delivered(`${id}.awaiting-1`), 150_000, "the plan recorded as delivered");
        const plans = await sentTo("person-2");
        expect(plans).toHaveLength(1);
        const plan = plans[0]?.text ?? "";
        expect(
          plan.startsWith("Needs your answer: a plan for acme-widget, “Add told.txt and commit it”."),
        ).toBe(true);
        expect(plan).toContain("PLAN-TOLD");
        expect(plan).toContain("Reply “approve” to carry it out");
        expectForAPerson(plan, id);

        // The person's own words, in their session: the agent finds the call in the plan's message.
        const turn = await agentTurn(gateway, session, "approve");
        expect(turn.code, turn.stderr).toBe(0);
        const approvals = model
          .agentRequests()
          .filter((request) => /(^|\s|\])approve$/.test(newestUserText(request).trim()));
        expect(approvals.length).toBeGreaterThan(0);
        await waitFor(
          () => stat(world.layout.dispatch.completedJson(id)).catch(() => undefined),
          180_000,
          "the completion",
        );
        const completion = JSON.parse(await readFile(world.layout.dispatch.completedJson(id), "utf8"));
        await waitFor(() => delivered(id), 180_000, "the final report recorded as delivered");
        const sent = await sentTo("person-2");
        expect(sent).toHaveLength(2);
        const final = sent[1]?.text ?? "";
        expect(final.startsWith("Ready to land: acme-widget")).toBe(true);
        expect(final).toContain("SHIPPED-TOLD");
        expectForAPerson(final, id);
        const audit = await readFile(world.layout.dispatch.audit, "utf8");
        const answered = audit.split("\n").filter((line) => line.includes(id) && line.includes('"answered"'));
        expect(answered).toHaveLength(1);

        // "land it": the branch comes into the person's checkout, once.
        const land = await agentTurn(gateway, session, "land it");
        expect(land.code, land.stderr).toBe(0);
        await waitFor(
          async () =>
            (await readFile(join(world.repo, "told.txt"), "utf8").catch(() => "")).includes(
              "planned and approved",
            ) || undefined,
          60_000,
          "told.txt landed in the checkout",
        );
        expect(completion.commits).toBeGreaterThan(0);
        expect(await sentTo("person-2")).toHaveLength(2);
      } finally {
        await coding.stop();
      }
    }, 600_000);

    it("a failed dispatch: one message that says Failed and why, once, with one piece of advice and nothing to land", async () => {
      const session = "agent:main:person-failed";
      await bindPerson(session, "person-3");
      const dispatch = await dispatchFromChat(
        gateway,
        world,
        { task: "Summarise the whole monorepo history", project: "acme-widget", project_dir: world.repo },
        session,
      );
      const id = dispatch.id as string;
      await runCodingDaemonUntilDone(world, [scripted.promptTooLong()], id);
      const completion = JSON.parse(await readFile(world.layout.dispatch.completedJson(id), "utf8"));
      expect(completion.status).not.toBe("completed");
      await waitFor(() => delivered(id), 150_000, "the failure recorded as delivered");
      const sent = await sentTo("person-3");
      expect(sent).toHaveLength(1);
      const text = sent[0]?.text ?? "";
      expect(text).toMatch(/^(Failed|Ran out of time|Cancelled): acme-widget/);
      expect(text).not.toMatch(/Reply “land”|discard/);
      expect(text).not.toContain("**");
      // No local address but the review page's own link (on the address this world gives it).
      const reviewLinks = new RegExp(`${gateway.url.replaceAll(".", "\\.")}/gstack/review\\S*`, "g");
      expect(text.replaceAll(reviewLinks, "")).not.toMatch(/127\.0\.0\.1|localhost:\d/);
      expect(text).not.toMatch(/\b1 turns\b/);
      expect(text).not.toContain("..");
      expectForAPerson(text, id);
    }, 600_000);

    it("the agent's answer reaches the person only when it adds something, once", async () => {
      const session = "agent:main:person-adds";
      await bindPerson(session, "person-4");
      answers.set("ADDS-SHIPPED", "Heads up: NOTE-FROM-MEMORY, you froze this module last week.");
      const dispatch = await dispatchFromChat(
        gateway,
        world,
        { task: "Add adds.txt and commit it", project: "acme-widget", project_dir: world.repo },
        session,
      );
      const id = dispatch.id as string;
      await runCodingDaemonUntilDone(world, shipScript("adds.txt", "ADDS-SHIPPED"), id);
      await waitFor(() => delivered(id), 150_000, "the report recorded as delivered");
      const sent = await sentTo("person-4");
      expect(sent.map((message) => message.text.includes("ADDS-SHIPPED"))).toEqual([true, false]);
      expect(sent[1]?.text).toBe("Heads up: NOTE-FROM-MEMORY, you froze this module last week.");
    }, 600_000);

    it("a gateway killed in the report's turn, and again in the look it gets after the restart: the person told once, the report in the session once, nobody else anything again", async () => {
      const session = "agent:main:person-killed";
      await bindPerson(session, "person-5");
      const dispatch = await dispatchFromChat(
        gateway,
        world,
        { task: "Add killed.txt and commit it", project: "acme-widget", project_dir: world.repo },
        session,
      );
      const id = dispatch.id as string;
      const marker = reportMarker(`gstack:${id}:completed`);
      const holding = () =>
        model.agentRequests().filter((request) => newestUserText(request).includes("KILLED-SHIPPED"));
      holds.add("KILLED-SHIPPED");
      const outboxFile = join(home.stateDir, "gstack", "outbox", `${id}.json`);
      await runCodingDaemonUntilDone(world, shipScript("killed.txt", "KILLED-SHIPPED"), id);
      // Killed inside the report's own turn, the model holding its request.
      await waitFor(
        async () =>
          (JSON.parse(await readFile(outboxFile, "utf8").catch(() => "{}")) as { run_id?: string }).run_id,
        120_000,
        "the report's turn under way",
      );
      await waitFor(() => holding().length > 0 || undefined, 120_000, "the report's turn at the model");
      const before = holding().length;
      // What everyone else was sent before the kills (the person-5 message is not sent yet).
      const othersBefore = (await sentMessages()).filter((message) => message.to !== "person-5");
      await gateway.kill();
      expect(await delivered(id)).toBeUndefined();
      // Killed again inside the look the restart gives it (OpenClaw resuming the turn, or the plugin's).
      gateway = await startOpenClawGateway({ home: home.home });
      await waitFor(
        () => holding().length > before || undefined,
        180_000,
        "the report's look after the restart",
      );
      await gateway.kill();
      holds.clear();
      gateway = await startOpenClawGateway({ home: home.home });
      await waitFor(() => delivered(id), 180_000, "the report settled after the restarts");
      // OpenClaw's own restart recovery resumes the cut-off turn and tells the person so with its
      // fixed notice (for any turn a crash interrupts; an installed plugin cannot turn it off). Besides
      // that notice: the gstack message once, no copy of it, no error.
      const all = await sentTo("person-5");
      const sent = all.filter((message) => !message.text.startsWith(OPENCLAW_RESTART_NOTICE));
      expect(sent).toHaveLength(1);
      expect(sent[0]?.text).toContain("KILLED-SHIPPED");
      for (const message of all) expectForAPerson(message.text, id);
      // The session holds the report once; no turn of the agent ever held it twice.
      const history = await chatHistory(gateway, session);
      const copies = history.filter(
        (message) => message.role !== "assistant" && message.text.includes(marker),
      );
      expect(copies.length).toBeLessThanOrEqual(1);
      expect(
        model.agentRequests().filter((request) => JSON.stringify(request.body).split(marker).length - 1 > 1),
      ).toHaveLength(0);
      // The restarted gateways sent nobody else anything again, nor on a turn of their own.
      await agentTurn(gateway, "agent:main:person", "Anything new?");
      expect((await sentMessages()).filter((message) => message.to !== "person-5")).toEqual(othersBefore);
    }, 900_000);
  });
}

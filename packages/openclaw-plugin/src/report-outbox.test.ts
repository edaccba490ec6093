import { AsyncLocalStorage } from "node:async_hooks";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { loadBudget } from "../../../vitest.load-budget";
import { type DeliveredLedger, deliveredLedger } from "./delivered-ledger";
import { type ReportOutbox, reportMarker, reportOutbox, standingIn } from "./report-outbox";
import type { HistoryMessage, SessionChannel, TurnEnd } from "./session-delivery";

/**
 * A session host with the behaviour the outbox relies on: a posted message joins the
 * session's history when its turn starts, turns of one session run one at a time, and a
 * turn ends (with an assistant answer) when the test says so.
 */
class FakeSessions implements SessionChannel {
  histories = new Map<string, HistoryMessage[]>();
  posts: { sessionKey: string; text: string; runId: string }[] = [];
  private ends = new Map<string, (end: TurnEnd) => void>();
  private ended = new Map<string, TurnEnd>();
  /** When false, a posted message never reaches the history (a gateway that dropped it). */
  recordMessages = true;
  answer = true;
  /** What the agent answers when a turn ends. */
  answerText = "Noted.";
  /** Runs on each post before it joins the history (OpenClaw's own repairs of the transcript). */
  onPost?: (input: { sessionKey: string; text: string }) => void;
  tellPerson?: SessionChannel["tellPerson"];
  resuming?: SessionChannel["resuming"];

  async post(input: { sessionKey: string; text: string }): Promise<string> {
    const runId = `run-${this.posts.length + 1}`;
    this.posts.push({ ...input, runId });
    this.onPost?.(input);
    if (this.recordMessages) this.historyOf(input.sessionKey).push({ role: "user", text: input.text });
    return runId;
  }

  async waitForTurn(runId: string): Promise<TurnEnd> {
    const done = this.ended.get(runId);
    if (done) return done;
    return await new Promise((resolve) => this.ends.set(runId, resolve));
  }

  async history(sessionKey: string): Promise<HistoryMessage[]> {
    return [...this.historyOf(sessionKey)];
  }

  /** Ends a turn: the agent answers (unless told not to) and the wait returns. */
  finish(runId: string, end: TurnEnd = "ended"): void {
    const post = this.posts.find((candidate) => candidate.runId === runId);
    if (post && this.answer && this.recordMessages) {
      this.historyOf(post.sessionKey).push({
        role: "assistant",
        text: this.answerText,
        reply: this.answerText,
      });
    }
    this.ended.set(runId, end);
    this.ends.get(runId)?.(end);
  }

  historyOf(sessionKey: string): HistoryMessage[] {
    let history = this.histories.get(sessionKey);
    if (!history) {
      history = [];
      this.histories.set(sessionKey, history);
    }
    return history;
  }
}

let base: string;
let ledger: DeliveredLedger;
let sessions: FakeSessions;
let outbox: ReportOutbox | undefined;
const WAIT = { timeout: loadBudget(10_000), interval: 5 };

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), "report-outbox-"));
  ledger = deliveredLedger(base);
  sessions = new FakeSessions();
});

afterEach(async () => {
  await outbox?.close();
  outbox = undefined;
  await rm(base, { recursive: true, force: true });
});

function open(channel: SessionChannel = sessions) {
  outbox = reportOutbox({ stateDir: base, ledger, channel, log: { warn: () => undefined }, sweepMs: 60_000 });
  return outbox;
}

const report = (id: string, sessionKey = "agent:main:main") => ({
  key: `gstack:${id}:completed`,
  dispatch_id: id,
  session_key: sessionKey,
  text: `Report of ${id}.\n${reportMarker(`gstack:${id}:completed`)}`,
  via: "completed-folder" as const,
});

describe("the report outbox", () => {
  it("keeps a report added before start and delivers it from the service's context, not the caller's", async () => {
    // OpenClaw serves plugin routes before it starts plugin services: a report taken by a route
    // then must not be delivered inside that request's context (its gateway scope).
    const scope = new AsyncLocalStorage<string>();
    const seenIn: (string | undefined)[] = [];
    const channel = new FakeSessions();
    const post = channel.post.bind(channel);
    channel.post = async (input) => {
      seenIn.push(scope.getStore());
      return await post(input);
    };
    const box = open(channel);
    await scope.run("route request", () => box.add(report("d-early")));
    expect(await readdir(box.folder)).toEqual(["d-early.json"]);
    expect(channel.posts).toHaveLength(0);
    await scope.run("service", () => box.start());
    await vi.waitUntil(() => channel.posts.length === 1, WAIT);
    channel.finish("run-1");
    await vi.waitUntil(async () => await ledger.has("d-early"), WAIT);
    expect(seenIn).toEqual(["service"]);
  });

  it("records a report as delivered only once its turn ended and the history holds it", async () => {
    const box = open();
    await box.start();
    await box.add(report("d-1"));
    await vi.waitUntil(() => sessions.posts.length === 1, WAIT);
    expect(await ledger.has("d-1")).toBe(false);
    sessions.finish("run-1");
    await vi.waitUntil(
      async () => (await ledger.has("d-1")) && (await readdir(box.folder)).length === 0,
      WAIT,
    );
  });

  it("sends each report to the person's channel once, even when the agent answers nothing, and not again after a restart", async () => {
    const told: { sessionKey: string; text: string }[] = [];
    sessions.answer = false;
    sessions.tellPerson = async (input: { sessionKey: string; text: string }) => {
      told.push(input);
      return "sent" as const;
    };
    const box = open();
    await box.start();
    await box.add(report("d-1"));
    await box.add(report("d-2"));
    await vi.waitUntil(() => sessions.posts.length === 1, WAIT);
    sessions.finish("run-1");
    await vi.waitUntil(() => sessions.posts.length === 2, WAIT);
    sessions.finish("run-2");
    await vi.waitUntil(async () => (await ledger.list()).length === 2, WAIT);
    expect(told.map((entry) => entry.text)).toEqual([report("d-1").text, report("d-2").text]);
    for (const id of ["d-1", "d-2"]) {
      const record = JSON.parse(await readFile(join(ledger.folder, `${id}.json`), "utf8"));
      expect(record.person).toBe("sent");
    }
    await box.close();
    // A process that stopped right after sending d-3 to the person, before recording it.
    const d3 = report("d-3");
    sessions
      .historyOf(d3.session_key)
      .push({ role: "user", text: d3.text }, { role: "assistant", text: "Done." });
    await writeFile(
      join(box.folder, "d-3.json"),
      JSON.stringify({
        ...d3,
        queued_at: "2026-01-01T00:00:00Z",
        posted_at: "2026-01-01T00:00:01Z",
        attempts: 1,
        told_at: "2026-01-01T00:00:02Z",
      }),
    );
    const again = open();
    await again.start();
    await vi.waitUntil(() => ledger.has("d-3"), WAIT);
    expect(told).toHaveLength(2);
  });

  it("batches the reports that arrive while a turn runs into the next turn, at most batchSize to one", async () => {
    outbox = reportOutbox({
      stateDir: base,
      ledger,
      channel: sessions,
      log: { warn: () => undefined },
      batchSize: 3,
      sweepMs: 60_000,
    });
    await outbox.start();
    await outbox.add(report("d-0"));
    await vi.waitUntil(() => sessions.posts.length === 1, WAIT);
    for (let index = 1; index <= 5; index++) await outbox.add(report(`d-${index}`));
    sessions.finish("run-1");
    await vi.waitUntil(() => sessions.posts.length === 2, WAIT);
    expect(sessions.posts[1]?.text).toContain("3 gstack dispatches ended:");
    sessions.finish("run-2");
    await vi.waitUntil(() => sessions.posts.length === 3, WAIT);
    sessions.finish("run-3");
    await vi.waitUntil(async () => (await ledger.list()).length === 6, WAIT);
    const all = sessions.posts.map((post) => post.text).join("\n");
    for (let index = 0; index <= 5; index++) {
      expect(all.split(reportMarker(`gstack:d-${index}:completed`)).length - 1).toBe(1);
    }
  });

  it("keeps sessions apart: a slow turn in one does not hold back another", async () => {
    const box = open();
    await box.start();
    await box.add(report("a-1", "agent:main:a"));
    await box.add(report("b-1", "agent:main:b"));
    await vi.waitUntil(() => sessions.posts.length === 2, WAIT);
    const forB = sessions.posts.find((post) => post.sessionKey === "agent:main:b");
    sessions.finish(forB?.runId ?? "");
    await vi.waitUntil(() => ledger.has("b-1"), WAIT);
    expect(await ledger.has("a-1")).toBe(false);
    expect(
      sessions
        .historyOf("agent:main:a")
        .map((message) => message.text)
        .join(),
    ).not.toContain("b-1");
  });

  it("posts again a report its turn never recorded", async () => {
    const box = open();
    await box.start();
    sessions.recordMessages = false;
    await box.add(report("d-lost"));
    await vi.waitUntil(() => sessions.posts.length === 1, WAIT);
    sessions.recordMessages = true;
    sessions.finish("run-1", "failed");
    await vi.waitUntil(() => sessions.posts.length === 2, WAIT);
    sessions.finish("run-2");
    await vi.waitUntil(() => ledger.has("d-lost"), WAIT);
  });

  it("after a restart, posts what was queued and never reached the history, once", async () => {
    const first = open();
    await first.start();
    sessions.recordMessages = false;
    await first.add(report("d-queued"));
    await vi.waitUntil(() => sessions.posts.length === 1, WAIT);
    await closeWithoutWaiting(first);

    sessions.recordMessages = true;
    const second = open();
    await second.start();
    await vi.waitUntil(() => sessions.posts.length === 2, WAIT);
    sessions.finish("run-2");
    await vi.waitUntil(() => ledger.has("d-queued"), WAIT);
    const history = sessions.historyOf("agent:main:main").filter((message) => message.role === "user");
    expect(history).toHaveLength(1);
  });

  it("after a restart mid-turn, asks for an answer without putting the report in the conversation twice", async () => {
    const first = open();
    await first.start();
    await first.add(report("d-cut"));
    await vi.waitUntil(() => sessions.posts.length === 1, WAIT);
    await closeWithoutWaiting(first);

    const second = open();
    await second.start();
    await vi.waitUntil(() => sessions.posts.length === 2, WAIT);
    expect(sessions.posts[1]?.text).toContain("gstack:d-cut:completed");
    expect(sessions.posts[1]?.text).not.toContain(reportMarker("gstack:d-cut:completed"));
    sessions.finish("run-2");
    await vi.waitUntil(() => ledger.has("d-cut"), WAIT);
    const markers = sessions
      .historyOf("agent:main:main")
      .filter((message) => message.text.includes(reportMarker("gstack:d-cut:completed")));
    expect(markers).toHaveLength(1);
  });

  it("tells the person first, in their words, then gives the session its own copy saying so", async () => {
    const order: string[] = [];
    sessions.tellPerson = async (input) => {
      order.push(`person: ${input.text}`);
      return "sent" as const;
    };
    const post = sessions.post.bind(sessions);
    sessions.post = async (input) => {
      order.push("session");
      return await post(input);
    };
    sessions.answerText = "NO_REPLY";
    const box = open();
    await box.start();
    await box.add({ ...report("d-words"), person_text: "Ready to land: acme." });
    await vi.waitUntil(() => sessions.posts.length === 1, WAIT);
    expect(order).toEqual(["person: Ready to land: acme.", "session"]);
    expect(sessions.posts[0]?.text).toContain("Answer exactly NO_REPLY unless you have something to add");
    expect(sessions.posts[0]?.text).toContain(reportMarker("gstack:d-words:completed"));
    sessions.finish("run-1");
    await vi.waitUntil(() => ledger.has("d-words"), WAIT);
    expect(order).toHaveLength(2);
    const record = JSON.parse(await readFile(join(ledger.folder, "d-words.json"), "utf8"));
    expect(record).toMatchObject({ person: "sent", answer: "silent" });
  });

  it("passes on the agent's answer only when it adds to what the person read, once", async () => {
    const told: { sessionKey: string; text: string }[] = [];
    sessions.tellPerson = async (input) => {
      told.push(input);
      return "sent" as const;
    };
    const news = "Ready to land: acme, add the login page. What shipped: the login page and its tests.";
    const cases = [
      { session: "agent:main:silent", answer: "NO_REPLY", verdict: "silent" },
      {
        session: "agent:main:echo",
        answer: "Ready to land: acme, add the login page and its tests.",
        verdict: "repeat",
      },
      {
        session: "agent:main:adds",
        answer: "Heads up: you froze the auth module last week; this touches it.",
        verdict: "sent",
      },
      { session: "agent:main:key", answer: "(report key gstack:d-3:completed)", verdict: "silent" },
      {
        session: "agent:main:keyed",
        answer: "Heads up: the staging deploy is frozen until Monday.\n(report key gstack:d-4:completed)",
        verdict: "sent",
      },
    ];
    const box = open();
    await box.start();
    for (const [index, item] of cases.entries()) {
      sessions.answerText = item.answer;
      await box.add({ ...report(`d-${index}`, item.session), person_text: news });
      await vi.waitUntil(() => sessions.posts.length === index + 1, WAIT);
      sessions.finish(`run-${index + 1}`);
      await vi.waitUntil(() => ledger.has(`d-${index}`), WAIT);
      const record = JSON.parse(await readFile(join(ledger.folder, `d-${index}.json`), "utf8"));
      expect(record.answer).toBe(item.verdict);
    }
    expect(told.map((entry) => [entry.sessionKey, entry.text])).toEqual([
      ["agent:main:silent", news],
      ["agent:main:echo", news],
      ["agent:main:adds", news],
      ["agent:main:adds", "Heads up: you froze the auth module last week; this touches it."],
      ["agent:main:key", news],
      ["agent:main:keyed", news],
      ["agent:main:keyed", "Heads up: the staging deploy is frozen until Monday."],
    ]);
  });

  it("when the person's message could not be sent, the agent's answer is what reaches them", async () => {
    const told: string[] = [];
    let calls = 0;
    sessions.tellPerson = async (input) => {
      calls += 1;
      if (calls === 1) throw new Error("channel down");
      told.push(input.text);
      return "sent" as const;
    };
    sessions.answerText = "Ready to land: acme, add the login page.";
    const box = open();
    await box.start();
    await box.add({ ...report("d-down"), person_text: "Ready to land: acme, add the login page." });
    await vi.waitUntil(() => sessions.posts.length === 1, WAIT);
    expect(sessions.posts[0]?.text).toContain("could not be sent to the person's channel");
    sessions.finish("run-1");
    await vi.waitUntil(() => ledger.has("d-down"), WAIT);
    expect(told).toEqual(["Ready to land: acme, add the login page."]);
  });

  it("a report cut short gets one more look, and not the whole report again when OpenClaw folds it into that turn", async () => {
    const told: string[] = [];
    sessions.tellPerson = async (input) => {
      told.push(input.text);
      return "sent" as const;
    };
    const first = open();
    await first.start();
    await first.add({ ...report("d-fold"), person_text: "Done: acme." });
    await vi.waitUntil(() => sessions.posts.length === 1, WAIT);
    await closeWithoutWaiting(first);

    // OpenClaw repairs the transcript at the next turn: the cut-off message leaves the history.
    const marker = reportMarker("gstack:d-fold:completed");
    sessions.onPost = (input) => {
      const history = sessions.historyOf(input.sessionKey);
      const at = history.findIndex((message) => message.text.includes(marker));
      if (at >= 0) history.splice(at, 1);
    };
    sessions.answerText = "NO_REPLY";
    const second = open();
    await second.start();
    await vi.waitUntil(() => sessions.posts.length === 2, WAIT);
    expect(sessions.posts[1]?.text).toContain("one more look at gstack:d-fold:completed");
    expect(sessions.posts[1]?.text).not.toContain(marker);
    sessions.finish("run-2");
    await vi.waitUntil(() => ledger.has("d-fold"), WAIT);
    await second.idle();
    expect(sessions.posts).toHaveLength(2);
    expect(told).toEqual(["Done: acme."]);
  });

  it("a second cut, during the one more look, ends it: no third turn, the person told once", async () => {
    const told: string[] = [];
    sessions.tellPerson = async (input) => {
      told.push(input.text);
      return "sent" as const;
    };
    const first = open();
    await first.start();
    await first.add({ ...report("d-twice"), person_text: "Done: acme." });
    await vi.waitUntil(() => sessions.posts.length === 1, WAIT);
    await closeWithoutWaiting(first);
    const second = open();
    await second.start();
    await vi.waitUntil(() => sessions.posts.length === 2, WAIT);
    await closeWithoutWaiting(second);
    const third = open();
    await third.start();
    await vi.waitUntil(() => ledger.has("d-twice"), WAIT);
    await third.idle();
    expect(sessions.posts).toHaveLength(2);
    expect(told).toEqual(["Done: acme."]);
  });

  it("leaves the one more look to OpenClaw when it resumes the cut-off turn itself", async () => {
    const first = open();
    await first.start();
    await first.add(report("d-resumed"));
    await vi.waitUntil(() => sessions.posts.length === 1, WAIT);
    await closeWithoutWaiting(first);

    // After the restart OpenClaw's own recovery resumes the turn the kill cut off.
    let resuming = true;
    sessions.resuming = async () => resuming;
    const second = open();
    await second.start();
    await vi.waitUntil(async () => {
      const entry = JSON.parse(await readFile(join(second.folder, "d-resumed.json"), "utf8"));
      return entry.looked_by === "openclaw";
    }, WAIT);
    expect(sessions.posts).toHaveLength(1);
    // The resumed turn answers, and OpenClaw's recovery is over.
    sessions.historyOf("agent:main:main").push({ role: "assistant", text: "NO_REPLY", reply: "NO_REPLY" });
    resuming = false;
    await vi.waitUntil(() => ledger.has("d-resumed"), WAIT);
    expect(sessions.posts).toHaveLength(1);
  });

  it("gives the look itself when OpenClaw says it resumes the cut-off turn and no turn comes", async () => {
    const first = open();
    await first.start();
    await first.add(report("d-stuck"));
    await vi.waitUntil(() => sessions.posts.length === 1, WAIT);
    await closeWithoutWaiting(first);

    // OpenClaw's session entry keeps saying it resumes (a recovery it retired), and nothing runs.
    sessions.resuming = async () => true;
    outbox = reportOutbox({
      stateDir: base,
      ledger,
      channel: sessions,
      log: { warn: () => undefined },
      sweepMs: 60_000,
      resumeGraceMs: 300,
    });
    await outbox.start();
    await vi.waitUntil(() => sessions.posts.length === 2, WAIT);
    expect(sessions.posts[1]?.text).toContain("one more look at gstack:d-stuck:completed");
    sessions.finish("run-2");
    await vi.waitUntil(() => ledger.has("d-stuck"), WAIT);
    await outbox.idle();
    // One look, never a second, and the report itself never posted again.
    expect(sessions.posts).toHaveLength(2);
  });

  it("still gives the one more look when the gateway refused it while starting", async () => {
    const first = open();
    await first.start();
    await first.add(report("d-refused"));
    await vi.waitUntil(() => sessions.posts.length === 1, WAIT);
    await closeWithoutWaiting(first);

    let refusals = 1;
    const post = sessions.post.bind(sessions);
    sessions.post = async (input) => {
      if (refusals-- > 0) throw new Error("agent unavailable during gateway startup");
      return await post(input);
    };
    const second = open();
    await second.start();
    await vi.waitUntil(() => sessions.posts.length === 2, WAIT);
    expect(sessions.posts[1]?.text).toContain("one more look at gstack:d-refused:completed");
    sessions.finish("run-2");
    await vi.waitUntil(() => ledger.has("d-refused"), WAIT);
  });

  it("refuses a second copy of a report it holds", async () => {
    const box = open();
    await box.start();
    expect(await box.add(report("d-2"))).toBe("queued");
    expect(await box.add(report("d-2"))).toBe("already-queued");
  });
});

describe("standingIn", () => {
  const marker = reportMarker("gstack:x:completed");
  it("reads absent, unanswered and answered from the history", () => {
    expect(standingIn([{ role: "user", text: "hello" }], "gstack:x:completed")).toBe("absent");
    expect(standingIn([{ role: "user", text: `r ${marker}` }], "gstack:x:completed")).toBe("unanswered");
    expect(
      standingIn(
        [
          { role: "user", text: `r ${marker}` },
          { role: "assistant", text: "ok" },
        ],
        "gstack:x:completed",
      ),
    ).toBe("answered");
    // The agent quoting the marker is not the report arriving.
    expect(standingIn([{ role: "assistant", text: marker }], "gstack:x:completed")).toBe("absent");
  });
});

/** Stops an outbox the way a killed gateway does: its turns are never waited for. */
async function closeWithoutWaiting(box: ReportOutbox): Promise<void> {
  void box.close();
  outbox = undefined;
}

import { mkdir, mkdtemp, readdir, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AwaitingNotice, type Completion, gstackLayout, parseJson } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { loadBudget } from "../../../vitest.load-budget";
import { awaitingInbox, followAwaitingFolder } from "./awaiting-follower";
import { awaitingKey, awaitingMessage } from "./awaiting-message";
import { completionInbox } from "./completion-follower";
import { type DeliveredLedger, deliveredLedger } from "./delivered-ledger";
import type { PluginSettings } from "./plugin-settings";
import { type ReportOutbox, reportMarker, reportOutbox } from "./report-outbox";
import type { HistoryMessage, SessionChannel } from "./session-delivery";

const WAIT = { timeout: loadBudget(10_000), interval: 10 };
const SESSION = "agent:main:main";

/** Sessions whose turns end at once with an answer, as a gateway with a quick agent does. */
class QuickSessions implements SessionChannel {
  posts: { sessionKey: string; text: string }[] = [];
  told: string[] = [];
  histories = new Map<string, HistoryMessage[]>();
  async post(input: { sessionKey: string; text: string }) {
    this.posts.push(input);
    const history = this.histories.get(input.sessionKey) ?? [];
    history.push({ role: "user", text: input.text }, { role: "assistant", text: "Noted." });
    this.histories.set(input.sessionKey, history);
    return `run-${this.posts.length}`;
  }
  async waitForTurn() {
    return "ended" as const;
  }
  async history(sessionKey: string) {
    return [...(this.histories.get(sessionKey) ?? [])];
  }
  async tellPerson({ text }: { sessionKey: string; text: string }) {
    this.told.push(text);
    return "sent" as const;
  }
}

let base: string;
let settings: PluginSettings;
let ledger: DeliveredLedger;
let sessions: QuickSessions;
let outbox: ReportOutbox | undefined;
let follower: ReturnType<typeof followAwaitingFolder> | undefined;
let warnings: string[];

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), "awaiting-follower-"));
  const layout = gstackLayout(join(base, "gstack"));
  await mkdir(layout.dispatch.awaiting, { recursive: true });
  await mkdir(layout.dispatch.completed, { recursive: true });
  settings = { layout, stateDir: join(base, "openclaw-state") } as PluginSettings;
  ledger = deliveredLedger(settings.stateDir);
  sessions = new QuickSessions();
  warnings = [];
});

afterEach(async () => {
  await stop();
  await rm(base, { recursive: true, force: true });
});

async function start() {
  outbox = reportOutbox({
    stateDir: settings.stateDir,
    ledger,
    channel: sessions,
    log: { warn: () => undefined },
  });
  await outbox.start();
  follower = followAwaitingFolder(settings, awaitingInbox(settings, ledger, outbox), {
    warn: (message) => warnings.push(message),
  });
  await follower.ready;
}

async function stop() {
  await follower?.close();
  follower = undefined;
  await outbox?.idle();
  await outbox?.close();
  outbox = undefined;
}

function notice(id: string, round = 1, extra: Partial<AwaitingNotice> = {}): AwaitingNotice {
  return {
    dispatch_id: id,
    status: "awaiting",
    project: "acme-widget",
    kind: "plan",
    since: "2026-11-23T10:00:00.000Z",
    expires_at: "2026-11-26T10:00:00.000Z",
    round,
    summary: `## Plan\n1. Add plan.txt (PLAN-ROUND-${round})`,
    how_to_answer: `gstack-dispatch answer ${id} approve | revise "<what to change>" | reject "<why>"`,
    reply_to: { runtime: "openclaw", session_key: SESSION },
    ...extra,
  };
}

/** The daemon's state of a dispatch, as the follower checks it. */
async function state(id: string, status: string, round?: number, kind = "plan") {
  await mkdir(settings.layout.dispatch.sessionDir(id), { recursive: true });
  await writeFile(
    join(settings.layout.dispatch.sessionDir(id), "state.json"),
    JSON.stringify({ id, status, ...(round ? { awaiting: { kind, round } } : {}) }),
  );
}

/** Writes a notice the way the daemon does: whole, then renamed into place. */
async function publish(value: unknown, id: string) {
  const hidden = join(settings.layout.dispatch.awaiting, `.${id}.json.tmp`);
  await writeFile(hidden, typeof value === "string" ? value : JSON.stringify(value));
  await rename(hidden, join(settings.layout.dispatch.awaiting, `${id}.json`));
}

const postsWith = (needle: string) => sessions.posts.filter((post) => post.text.includes(needle));

describe("waiting notices reach the session that asked", () => {
  it("posts a plan once per round, with how to answer, and not again after a restart", async () => {
    await start();
    await state("dispatch-p", "awaiting", 1);
    await publish(notice("dispatch-p"), "dispatch-p");
    await vi.waitFor(() => expect(postsWith("PLAN-ROUND-1")).toHaveLength(1), WAIT);
    const text = postsWith("PLAN-ROUND-1")[0]?.text ?? "";
    expect(text).toContain("gstack dispatch dispatch-p (acme-widget) has a plan and waits");
    expect(text).toContain("gstack_answer with dispatch_id dispatch-p, answer approve, round 1");
    expect(text).toContain("gstack-dispatch answer dispatch-p approve");
    expect(text.endsWith(reportMarker("gstack:dispatch-p:awaiting:1"))).toBe(true);
    await vi.waitFor(() => expect(sessions.told).toHaveLength(1), WAIT);
    await vi.waitFor(async () => expect(await ledger.has("dispatch-p.awaiting-1")).toBe(true), WAIT);
    // The same notice again (an event and a rescan) is not posted twice.
    await publish(notice("dispatch-p"), "dispatch-p");
    await stop();
    await start();
    await outbox?.idle();
    expect(postsWith("PLAN-ROUND-1")).toHaveLength(1);
    expect(sessions.told).toHaveLength(1);

    // A revision makes round 2: a report of its own; then the final completion of the dispatch.
    await state("dispatch-p", "awaiting", 2);
    await publish(notice("dispatch-p", 2), "dispatch-p");
    await vi.waitFor(() => expect(postsWith("PLAN-ROUND-2")).toHaveLength(1), WAIT);
    expect(postsWith("PLAN-ROUND-2")[0]?.text).toContain("round 2");
    await vi.waitFor(async () => expect(await ledger.has("dispatch-p.awaiting-2")).toBe(true), WAIT);
    const completions = completionInbox(settings, ledger, outbox as ReportOutbox);
    const completion = parseJson(
      "completion",
      JSON.stringify({
        dispatch_id: "dispatch-p",
        status: "completed",
        duration: 4,
        reply_to: { runtime: "openclaw", session_key: SESSION },
      } satisfies Partial<Completion>),
    );
    expect(await completions.deliver({ completion, via: "completed-folder" })).toBe("delivered");
    await vi.waitFor(() => expect(postsWith("gstack:dispatch-p:completed")).toHaveLength(1), WAIT);
    await vi.waitFor(async () => expect(await ledger.has("dispatch-p")).toBe(true), WAIT);
    expect(sessions.posts).toHaveLength(3);
  });

  it("does not post a notice whose round no longer waits, or whose dispatch the daemon does not know", async () => {
    await state("dispatch-old", "running");
    await publish(notice("dispatch-old"), "dispatch-old");
    await state("dispatch-later", "awaiting", 2);
    await publish(notice("dispatch-later", 1), "dispatch-later");
    await publish(notice("dispatch-unknown"), "dispatch-unknown");
    await start();
    await state("dispatch-now", "awaiting", 1);
    await publish(notice("dispatch-now"), "dispatch-now");
    await vi.waitFor(() => expect(postsWith("dispatch-now")).toHaveLength(1), WAIT);
    await outbox?.idle();
    expect(sessions.posts).toHaveLength(1);
    expect(await readdir(join(settings.stateDir, "delivered"))).toEqual(["dispatch-now.awaiting-1.json"]);
  });

  it("names the file of a notice that does not parse, and of one naming another dispatch, and goes on", async () => {
    await start();
    await publish("{ not json", "dispatch-bad");
    await state("dispatch-x", "awaiting", 1);
    await publish(notice("dispatch-x"), "dispatch-y");
    await state("dispatch-good", "awaiting", 1);
    await publish(notice("dispatch-good"), "dispatch-good");
    await vi.waitFor(() => expect(postsWith("dispatch-good")).toHaveLength(1), WAIT);
    await vi.waitFor(() => expect(warnings.length).toBeGreaterThanOrEqual(2), WAIT);
    expect(warnings.join("\n")).toContain(join(settings.layout.dispatch.awaiting, "dispatch-bad.json"));
    expect(warnings.join("\n")).toContain("names dispatch dispatch-x, not dispatch-y");
    expect(sessions.posts).toHaveLength(1);
  });
});

describe("awaitingMessage", () => {
  it("numbers a gate's decisions and says how to reply in gstack's grammar", () => {
    const text = awaitingMessage(
      notice("dispatch-g", 3, {
        kind: "gate",
        summary: "ignored when items are given",
        how_to_answer: "gstack-dispatch answer dispatch-g all | d1b …",
        items: [
          { label: "d1", title: "Which port", options: ["80", "8080"], recommended: "8080" },
          { label: "d2", title: "Keep the cache", options: ["yes", "no"], recommended: null },
        ],
      }),
    );
    expect(text).toContain("stopped at a gstack gate and waits for the person's decisions (gate revision 3)");
    expect(text).toContain("1. d1: Which port. Options: d1a) 80; d1b) 8080 (recommended: d1b).");
    expect(text).toContain("2. d2: Keep the cache. Options: d2a) yes; d2b) no (no recommendation).");
    expect(text).toContain(
      "answer reply, round 3, text in gstack's grammar: all (every recommendation), tokens such as d1b (decision d1, option b), or all except d1b.",
    );
    expect(text).toContain("gstack-dispatch answer dispatch-g all | d1b …");
    expect(text).not.toContain("ignored when items are given");
    expect(text).toContain(reportMarker(awaitingKey({ dispatch_id: "dispatch-g", round: 3 })));
  });

  it("gives its examples from the decisions that wait, and quotes a recommendation that is no option", () => {
    const text = awaitingMessage(
      notice("dispatch-h", 1, {
        kind: "gate",
        summary: "",
        how_to_answer: "gstack-dispatch answer dispatch-h all | d2b …",
        items: [
          { label: "d2", title: "Drop the cache", options: ["Keep it", "Drop it"], recommended: "Keep it" },
          { label: "p1", title: "Approve the plan", options: ["Approve"], recommended: "Approve later" },
        ],
      }),
    );
    expect(text).toContain("1. d2: Drop the cache. Options: d2a) Keep it; d2b) Drop it (recommended: d2a).");
    expect(text).toContain('2. p1: Approve the plan. Options: p1a) Approve (recommended: "Approve later").');
    expect(text).toContain("tokens such as d2b (decision d2, option b), or all except d2b.");
    expect(text).not.toContain("d1b");
  });
});

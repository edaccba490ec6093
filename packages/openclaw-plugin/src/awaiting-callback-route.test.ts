import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AWAITING_CALLBACK_TYPE,
  type AwaitingNotice,
  COMPLETION_CALLBACK_TYPE,
  type Completion,
  gstackLayout,
  signCallback,
} from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { loadBudget } from "../../../vitest.load-budget";
import { awaitingInbox } from "./awaiting-follower";
import { awaitingMessage } from "./awaiting-message";
import { completionCallbackHandler } from "./callback-route";
import { completionInbox } from "./completion-follower";
import { type DeliveredLedger, deliveredLedger } from "./delivered-ledger";
import type { PluginSettings } from "./plugin-settings";
import { type ReportOutbox, reportOutbox } from "./report-outbox";
import type { HistoryMessage, SessionChannel } from "./session-delivery";

const WAIT = { timeout: loadBudget(10_000), interval: 10 };
const SESSION = "agent:main:main";
const SECRET = "route-secret-0123456789abcdef";

/** Sessions whose turns end at once, their history holding what was posted. */
class QuickSessions implements SessionChannel {
  posts: { sessionKey: string; text: string }[] = [];
  /** What the person was told. */
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
let outbox: ReportOutbox;
let server: Server;
let url: string;

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), "awaiting-route-"));
  const layout = gstackLayout(join(base, "gstack"));
  await mkdir(layout.root, { recursive: true });
  const callbackSecretFile = join(base, "callback-secret");
  await writeFile(callbackSecretFile, SECRET, { mode: 0o600 });
  settings = { layout, stateDir: join(base, "openclaw-state"), callbackSecretFile } as PluginSettings;
  ledger = deliveredLedger(settings.stateDir);
  sessions = new QuickSessions();
  outbox = reportOutbox({
    stateDir: settings.stateDir,
    ledger,
    channel: sessions,
    log: { warn: () => undefined },
  });
  await outbox.start();
  const handler = completionCallbackHandler(
    settings,
    // This host's review page links to any dispatch it is asked about; which reports get one is the inbox's to say.
    completionInbox(settings, ledger, outbox, async (id) => `https://gw.example.com/gstack/review/d?c=${id}`),
    undefined,
    awaitingInbox(settings, ledger, outbox),
  );
  server = createServer((request, response) => void handler(request, response));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/gstack/completion`;
});

afterEach(async () => {
  await outbox.idle();
  await outbox.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await rm(base, { recursive: true, force: true });
});

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

function awaitingBody(value: AwaitingNotice, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    type: AWAITING_CALLBACK_TYPE,
    dispatch_id: value.dispatch_id,
    sent_at: new Date().toISOString(),
    notice: value,
    delivered_by: "build-box",
    ...extra,
  });
}

/** POSTs a body signed with `secret` at `at`, as the daemon does. */
async function post(
  body: string,
  options: { secret?: string; at?: Date; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const headers = {
    "content-type": "application/json",
    ...signCallback(body, options.secret ?? SECRET, options.at ?? new Date()),
    ...options.headers,
  };
  const response = await fetch(url, { method: "POST", headers, body });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const postsWith = (needle: string) => sessions.posts.filter((entry) => entry.text.includes(needle));

describe("the signed route takes waiting notices from a daemon on another host", () => {
  it("posts the plan into its session with the folder's text, once however often it is sent", async () => {
    const plan = notice("dispatch-r1");
    const first = await post(awaitingBody(plan));
    expect(first).toMatchObject({ status: 200, body: { ok: true, outcome: "delivered", round: 1 } });
    await vi.waitFor(() => expect(postsWith("PLAN-ROUND-1")).toHaveLength(1), WAIT);
    expect(postsWith("PLAN-ROUND-1")[0]?.text).toContain(awaitingMessage(plan));
    expect(postsWith("PLAN-ROUND-1")[0]?.sessionKey).toBe(SESSION);
    await vi.waitFor(async () => expect(await ledger.has("dispatch-r1.awaiting-1")).toBe(true), WAIT);
    // The daemon sends it again (a restart before it saw the 2xx): acknowledged, not posted again.
    const again = await post(awaitingBody(plan), { at: new Date(Date.now() + 1000) });
    expect(again).toMatchObject({ status: 200, body: { ok: true, outcome: "already-delivered" } });
    await outbox.idle();
    expect(postsWith("PLAN-ROUND-1")).toHaveLength(1);
  });

  it("refuses a wrong, missing or stale signature and a replayed request, posting nothing", async () => {
    const body = awaitingBody(notice("dispatch-r2"));
    expect((await post(body, { secret: "not-the-secret-0123456789" })).status).toBe(401);
    const unsigned = await fetch(url, {
      method: "POST",
      body,
      headers: { "content-type": "application/json" },
    });
    expect(unsigned.status).toBe(401);
    const stale = await post(body, { at: new Date(Date.now() - 600_000) });
    expect(stale).toMatchObject({ status: 401, body: { reason: "stale" } });
    const headers = signCallback(body, SECRET);
    const once = await fetch(url, { method: "POST", body, headers });
    expect(once.status).toBe(200);
    const replayed = await fetch(url, { method: "POST", body, headers });
    expect(replayed.status).toBe(409);
    await outbox.idle();
    expect(postsWith("PLAN-ROUND-1")).toHaveLength(1);
  });

  it("refuses a body that is not a valid notice, naming the field and the rule", async () => {
    const roundZero = await post(awaitingBody({ ...notice("dispatch-r3"), round: 0 }));
    expect(roundZero).toMatchObject({ status: 400, body: { ok: false, field: "notice.round" } });
    expect(typeof roundZero.body.rule).toBe("string");
    const terminal = await post(
      awaitingBody({ ...notice("dispatch-r3"), status: "completed" } as unknown as AwaitingNotice),
    );
    expect(terminal).toMatchObject({ status: 400, body: { field: "notice.status" } });
    const other = await post(awaitingBody(notice("dispatch-r3"), { dispatch_id: "dispatch-other" }));
    expect(other).toMatchObject({
      status: 400,
      body: { field: "notice.dispatch_id", rule: "same_dispatch" },
    });
    const neither = await post(JSON.stringify({ type: "gstack.dispatch.other", dispatch_id: "dispatch-r3" }));
    expect(neither).toMatchObject({ status: 400, body: { field: "type" } });
    await outbox.idle();
    expect(sessions.posts).toHaveLength(0);
  });

  it("refuses a notice for a dispatch whose completion it already took", async () => {
    const completion = {
      dispatch_id: "dispatch-r4",
      status: "completed",
      duration: 12,
      commits: 1,
      project: "acme-widget",
      agent: "claude",
      reply_to: { runtime: "openclaw", session_key: SESSION },
    } as Completion;
    const done = await post(
      JSON.stringify({
        type: COMPLETION_CALLBACK_TYPE,
        dispatch_id: "dispatch-r4",
        sent_at: new Date().toISOString(),
        completion,
      }),
    );
    expect(done.status).toBe(200);
    const late = await post(awaitingBody(notice("dispatch-r4")));
    expect(late).toMatchObject({ status: 409, body: { ok: false, rule: "finished" } });
    await outbox.idle();
    expect(postsWith("PLAN-ROUND-1")).toHaveLength(0);
  });

  it("refuses a round older than one it has, and takes a newer one", async () => {
    expect((await post(awaitingBody(notice("dispatch-r5", 2)))).status).toBe(200);
    const older = await post(awaitingBody(notice("dispatch-r5", 1)));
    expect(older).toMatchObject({ status: 409, body: { rule: "stale_round" } });
    expect((await post(awaitingBody(notice("dispatch-r5", 3)))).status).toBe(200);
    await vi.waitFor(() => expect(postsWith("PLAN-ROUND-3")).toHaveLength(1), WAIT);
    await outbox.idle();
    expect(postsWith("PLAN-ROUND-1")).toHaveLength(0);
    expect(postsWith("PLAN-ROUND-2")).toHaveLength(1);
  });

  it("refuses a notice that names no session the plugin knows", async () => {
    const { reply_to: _unused, ...bare } = notice("dispatch-r6");
    const orphan = await post(awaitingBody(bare as AwaitingNotice));
    expect(orphan).toMatchObject({ status: 422, body: { rule: "no_session" } });
    expect(sessions.posts).toHaveLength(0);
  });
});

describe("a report through the signed route", () => {
  const done = (id: string) =>
    post(
      JSON.stringify({
        type: COMPLETION_CALLBACK_TYPE,
        dispatch_id: id,
        sent_at: new Date().toISOString(),
        completion: {
          dispatch_id: id,
          status: "completed",
          duration: 30,
          project: "acme-widget",
          branch: `gstack/${id}`,
          base: "main",
          commits: 1,
          landing: "awaiting",
          reply_to: { runtime: "openclaw", session_key: SESSION },
        } as Completion,
      }),
    );

  it("of a daemon on another host: no link (its work is not here), and where to read and land the work", async () => {
    expect((await done("dispatch-far")).status).toBe(200);
    await vi.waitFor(() => expect(sessions.told).toHaveLength(1), WAIT);
    const told = sessions.told[0] ?? "";
    expect(told).not.toContain("/gstack/review");
    expect(told).not.toContain("Reply “land”");
    expect(told).toContain("The work is on the machine the coding agent ran on, on gstack/dispatch-far");
    expect(told).toContain("git diff main...gstack/dispatch-far");
    expect(told).toContain("land it there: gstack-dispatch land dispatch-far");
  });

  it("of a dispatch this host's daemon ran (the route used locally): the page's link, and land from chat", async () => {
    await mkdir(settings.layout.dispatch.sessionDir("dispatch-near"), { recursive: true });
    await writeFile(
      join(settings.layout.dispatch.sessionDir("dispatch-near"), "state.json"),
      JSON.stringify({ id: "dispatch-near" }),
    );
    expect((await done("dispatch-near")).status).toBe(200);
    await vi.waitFor(() => expect(sessions.told).toHaveLength(1), WAIT);
    const told = sessions.told[0] ?? "";
    expect(told).toContain(
      "Read the change and land it: https://gw.example.com/gstack/review/d?c=dispatch-near",
    );
    expect(told).toContain("Reply “land”");
  });
});

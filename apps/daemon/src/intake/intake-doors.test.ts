import { readdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Dispatch } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DaemonContext } from "../daemon-context";
import { auditOf, dispatchFor, makeWorld, roomContext, type TestWorld, waitFor } from "../test-support";
import { Intake, type IntakeSessions } from "./intake-doors";

/** What the session runner would have been handed, without a runner. */
class AdmittedSessions implements IntakeSessions {
  readonly admitted: Array<{
    dispatch: Dispatch;
    projectDir: string;
    source?: string;
    pendingCancel?: string;
  }> = [];
  has(id: string): boolean {
    return this.admitted.some((entry) => entry.dispatch.id === id);
  }
  get waiting(): number {
    return this.admitted.length;
  }
  async admit(
    dispatch: Dispatch,
    admission: { projectDir: string; firstSeen: Date; source?: string; pendingCancel?: string },
  ): Promise<number> {
    this.admitted.push({ dispatch, ...admission });
    return this.admitted.length;
  }
}

let world: TestWorld;
let context: DaemonContext;
let sessions: AdmittedSessions;
let intake: Intake;

beforeEach(async () => {
  world = await makeWorld();
  context = await roomContext(world);
  sessions = new AdmittedSessions();
  intake = new Intake(context, { sessions });
});

afterEach(async () => {
  await intake.close();
  await world.cleanup();
});

/** The dispatch files waiting in `dispatch/` (which also holds the daemon's folders). */
async function dispatchFiles(): Promise<string[]> {
  return (await readdir(world.layout.dispatch.incoming)).filter((name) => name.endsWith(".json"));
}

async function drop(name: string, content: unknown): Promise<string> {
  const temporary = join(world.layout.dispatch.tmp, name);
  await writeFile(temporary, typeof content === "string" ? content : JSON.stringify(content));
  const path = join(world.layout.dispatch.incoming, name);
  await rename(temporary, path);
  return path;
}

describe("the file door", () => {
  it("claims a dropped file, links it as claimed/{id}.json and admits it with its real project folder", async () => {
    await drop("any-name.json", dispatchFor(world, "dispatch-file", "say hi"));
    await intake.scanIncoming();
    expect(sessions.admitted).toEqual([
      expect.objectContaining({
        dispatch: expect.objectContaining({ id: "dispatch-file" }),
        projectDir: world.repo,
      }),
    ]);
    expect(await dispatchFiles()).toEqual([]);
    expect(await readdir(world.layout.dispatch.claimed)).toEqual(["dispatch-file.json"]);
    const events = (await auditOf(world.layout)).map((event) => [event.event, event.detail]);
    expect(events).toEqual([
      ["received", { file: "any-name.json" }],
      ["validated", { project: "acme-widget", agent: "codex", file: "any-name.json" }],
    ]);
  });

  it("refuses a bad file into rejected/ with its rule, and admits nothing", async () => {
    await drop("bad.json", { ...dispatchFor(world, "dispatch-bad", "say hi"), target_agent: "my-agent" });
    await intake.scanIncoming();
    expect(sessions.admitted).toEqual([]);
    expect((await readdir(world.layout.dispatch.rejected)).sort()).toEqual([
      "dispatch-bad.json",
      "dispatch-bad.reason.json",
    ]);
    const reason = JSON.parse(
      await readFile(join(world.layout.dispatch.rejected, "dispatch-bad.reason.json"), "utf8"),
    );
    expect(reason).toMatchObject({ rule: "target-agent", file: "bad.json", id: "dispatch-bad" });
    // The refusal says in words which field, which value, and which agents this daemon has.
    expect(reason.reason).toContain("target_agent 'my-agent' is neither a built-in agent nor one configured");
    expect(reason.reason).toContain("the agents here: codex");
  });

  it.each([
    [
      "a mode in another case",
      { mode: "Plan" },
      'mode: must be one of "execute", "plan", got the string "Plan" [invalid_value]',
    ],
    [
      "a mode that is a number",
      { mode: 1 },
      'mode: must be one of "execute", "plan", got number 1 [invalid_value]',
    ],
    [
      "a base starting with '-'",
      { base: "-x" },
      "base: must not start with '-' (git would read it as an option) [format:regex]",
    ],
  ])(
    "refuses a dispatch with %s: kept in rejected/ with a reason naming the field and rule, never admitted",
    async (_case, extra, rule) => {
      await drop("odd.json", dispatchFor(world, "dispatch-odd", "say hi", extra));
      await intake.scanIncoming();
      expect(sessions.admitted).toEqual([]);
      expect(await dispatchFiles()).toEqual([]);
      expect(await readdir(world.layout.dispatch.claimed)).toEqual([]);
      expect((await readdir(world.layout.dispatch.rejected)).sort()).toEqual([
        "dispatch-odd.json",
        "dispatch-odd.reason.json",
      ]);
      const reason = JSON.parse(
        await readFile(join(world.layout.dispatch.rejected, "dispatch-odd.reason.json"), "utf8"),
      );
      expect(reason).toMatchObject({ rule: "schema", file: "odd.json", id: "dispatch-odd" });
      expect(reason.reason).toBe(`odd.json: invalid dispatch\n  - ${rule}`);
      const rejected = (await auditOf(world.layout)).find((event) => event.event === "rejected");
      expect(rejected).toMatchObject({
        dispatch_id: "dispatch-odd",
        detail: { file: "odd.json", saved_as: "dispatch-odd.json" },
      });
      expect(String(rejected?.reason)).toContain(rule);
      expect((await auditOf(world.layout)).map((event) => event.event)).not.toContain("validated");
    },
  );

  it("routes what the watch sees: dispatch/ to intake, control/ to the cancel handler", async () => {
    const control: string[] = [];
    const watching = new Intake(context, { sessions, onControl: (_path, name) => control.push(name) });
    await watching.open();
    await drop("watched.json", dispatchFor(world, "dispatch-watched", "say hi"));
    await writeFile(join(world.layout.dispatch.control, "dispatch-x.cancel"), "{}");
    await waitFor(() => (sessions.has("dispatch-watched") ? true : undefined));
    await waitFor(() => (control.length > 0 ? true : undefined));
    // A name may be reported more than once (created, then written): the handler acts once.
    expect([...new Set(control)]).toEqual(["dispatch-x.cancel"]);
    await watching.close();
  });

  it("hands a cancel that came first to the runner with the dispatch", async () => {
    intake.rememberCancel("dispatch-early", "cancel requested before the dispatch was taken");
    await drop("early.json", dispatchFor(world, "dispatch-early", "say hi"));
    await intake.scanIncoming();
    expect(sessions.admitted[0]?.pendingCancel).toBe("cancel requested before the dispatch was taken");
  });

  it("takes nothing once the daemon is stopping", async () => {
    context.stopping = true;
    await drop("late.json", dispatchFor(world, "dispatch-late", "say hi"));
    await intake.scanIncoming();
    expect(sessions.admitted).toEqual([]);
    expect(await dispatchFiles()).toEqual(["late.json"]);
  });
});

describe("the offer door", () => {
  it("writes claimed/{id}.json before it answers, and leaves no private file", async () => {
    const text = JSON.stringify(dispatchFor(world, "dispatch-offer", "say hi"));
    expect(await intake.offer(text, "test")).toEqual({ accepted: true, id: "dispatch-offer", position: 1 });
    expect(await readdir(world.layout.dispatch.claimed)).toEqual(["dispatch-offer.json"]);
    expect(await readFile(world.layout.dispatch.claimedFile("dispatch-offer"), "utf8")).toBe(text);
    expect(sessions.admitted[0]).toMatchObject({ source: "test", projectDir: world.repo });
  });

  it("and the file door take one id once, whichever comes first", async () => {
    const first = dispatchFor(world, "dispatch-twice", "say hi");
    expect(await intake.offer(JSON.stringify(first), "test")).toMatchObject({ accepted: true });
    await drop("twice.json", first);
    await intake.scanIncoming();
    expect(sessions.admitted).toHaveLength(1);
    expect(await readdir(world.layout.dispatch.rejected)).toContain("dispatch-twice.reason.json");

    const second = dispatchFor(world, "dispatch-file-first", "say hi");
    await drop("file-first.json", second);
    await intake.scanIncoming();
    expect(await intake.offer(JSON.stringify(second), "test")).toMatchObject({
      accepted: false,
      rule: "duplicate",
      id: "dispatch-file-first",
    });
    expect(sessions.admitted.map((entry) => entry.dispatch.id)).toEqual([
      "dispatch-twice",
      "dispatch-file-first",
    ]);
  });

  it("takes no more than maxQueued from a burst of offers, and keeps nothing of the rest", async () => {
    const ids = Array.from({ length: 10 }, (_, index) => `dispatch-burst-${index}`);
    const verdicts = await Promise.all(
      ids.map((id) => intake.offer(JSON.stringify(dispatchFor(world, id, "x")), "test", { maxQueued: 3 })),
    );
    expect(verdicts.filter((verdict) => verdict.accepted).map((verdict) => verdict.id)).toEqual(
      ids.slice(0, 3),
    );
    for (const verdict of verdicts.slice(3))
      expect(verdict).toMatchObject({ accepted: false, rule: "queue_full" });
    expect((await readdir(world.layout.dispatch.claimed)).sort()).toEqual(
      ids.slice(0, 3).map((id) => `${id}.json`),
    );
  });

  it.each([
    ["mode", "Plan"],
    ["mode", 1],
    ["base", "-x"],
  ])("refuses a dispatch whose %s is %j, naming the field, and keeps nothing", async (field, value) => {
    const text = JSON.stringify(dispatchFor(world, "dispatch-odd-offer", "say hi", { [field]: value }));
    const verdict = await intake.offer(text, "test");
    expect(verdict).toMatchObject({ accepted: false, rule: "schema", id: "dispatch-odd-offer" });
    expect(verdict.accepted ? "" : verdict.reason).toMatch(
      new RegExp(`^test: invalid dispatch\\n  - ${field}: `),
    );
    expect(sessions.admitted).toEqual([]);
    expect(await readdir(world.layout.dispatch.claimed)).toEqual([]);
    expect(await readdir(world.layout.dispatch.rejected)).toEqual([]);
  });

  it("refuses an id whose claimed file another writer linked first", async () => {
    const dispatch = dispatchFor(world, "dispatch-linked", "say hi");
    await writeFile(world.layout.dispatch.claimedFile("dispatch-linked"), JSON.stringify(dispatch));
    expect(await intake.offer(JSON.stringify(dispatch), "test")).toMatchObject({
      accepted: false,
      rule: "duplicate",
    });
    expect(sessions.admitted).toEqual([]);
    expect((await readdir(world.layout.dispatch.claimed)).filter((name) => name.startsWith("."))).toEqual([]);
  });
});

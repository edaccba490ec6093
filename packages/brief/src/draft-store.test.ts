import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BriefDraft } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DraftFields } from "./brief-types";
import { draftStore } from "./draft-store";

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), "brief-drafts-"));
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

const fields: DraftFields = {
  project: "acme-baku",
  project_dir: "/repos/baku",
  task: "Finish the token refresh.",
  source: "checkpoint",
  source_ref: "checkpoint:acme-baku/20261126-173000-auth",
  base: "fix/auth",
  budget_usd: 5,
};
const replyTo = { runtime: "openclaw" as const, session_key: "agent:main:main" };

describe("draftStore", () => {
  it("keeps a draft as a private, validated file and reads it back", async () => {
    const store = draftStore(folder);
    const draft = await store.keep(fields, { replyTo, now: new Date("2026-11-27T09:00:00Z") });
    expect(draft.draft_id).toMatch(/^draft-20261127T090000-[0-9a-f]{8}$/);
    expect(draft.dispatch_id).toMatch(/^dispatch-20261127T090000-[0-9a-f]{8}$/);
    expect(await store.read(draft.draft_id)).toEqual(draft);
    const file = join(folder, `${draft.draft_id}.json`);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readdir(folder)).toEqual([`${draft.draft_id}.json`]);
  });

  it("sends a draft once: a second word, or two at once, make no second dispatch", async () => {
    const store = draftStore(folder);
    const draft = await store.keep(fields);
    const sent: BriefDraft[] = [];
    const sender = async (value: BriefDraft) => {
      sent.push(value);
      return { sent: true as const, dispatchId: value.dispatch_id };
    };
    const [first, second] = await Promise.all([
      store.send(draft.draft_id, sender),
      store.send(draft.draft_id, sender),
    ]);
    const third = await store.send(draft.draft_id, sender);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ ...fields, dispatch_id: draft.dispatch_id });
    expect([first.outcome, second.outcome].sort()).toEqual(["already-sent", "sent"]);
    expect(third).toMatchObject({ outcome: "already-sent", dispatchId: draft.dispatch_id });
    expect((await store.read(draft.draft_id))?.sent?.dispatch_id).toBe(draft.dispatch_id);
  });

  it("keeps a refused draft unsent, so the person can send it once the cause is fixed", async () => {
    const store = draftStore(folder);
    const draft = await store.keep(fields);
    const refused = await store.send(draft.draft_id, async () => ({
      sent: false,
      reason: "untrusted folder",
    }));
    expect(refused).toMatchObject({ outcome: "refused", reason: "untrusted folder" });
    expect((await store.read(draft.draft_id))?.sent).toBeUndefined();
    const later = await store.send(draft.draft_id, async (value) => ({
      sent: true,
      dispatchId: value.dispatch_id,
    }));
    expect(later.outcome).toBe("sent");
  });

  it("answers unknown for a draft never kept, and names the file and field of a broken one", async () => {
    const store = draftStore(folder);
    expect(await store.send("draft-nothing", async () => ({ sent: true, dispatchId: "dispatch-x" }))).toEqual(
      {
        outcome: "unknown",
        reason: "no draft draft-nothing is kept",
      },
    );
    expect(await store.send("../etc", async () => ({ sent: true, dispatchId: "dispatch-x" }))).toMatchObject({
      outcome: "unknown",
    });
    const draft = await store.keep(fields);
    const file = join(folder, `${draft.draft_id}.json`);
    await writeFile(file, (await readFile(file, "utf8")).replace('"fix/auth"', '"-x"'));
    await expect(store.read(draft.draft_id)).rejects.toThrow(
      new RegExp(`${draft.draft_id}\\.json[^]*base: must not start`),
    );
  });
});

describe("draftStore.answerable", () => {
  const person = { sessionKey: "agent:main:person", route: { channel: "telegram", to: "42" } };
  const cron = { runtime: "openclaw" as const, session_key: "agent:main:cron:job:run:1" };

  it("lists the drafts delivered to the person in the window; a sent one moves to sent", async () => {
    const store = draftStore(folder);
    const now = new Date("2026-11-27T09:00:00Z");
    const old = await store.keep(fields, {
      now: new Date("2026-11-26T09:00:00Z"),
      replyTo: cron,
      deliveredTo: person.route,
    });
    const other = await store.keep(fields, {
      now,
      replyTo: cron,
      deliveredTo: { channel: "telegram", to: "7" },
    });
    const mine = await store.keep(fields, {
      now,
      replyTo: cron,
      deliveredTo: { channel: "telegram", to: "42" },
    });
    expect(mine.delivered_to).toEqual({ channel: "telegram", to: "42" });
    const later = new Date("2026-11-27T10:00:00Z");
    const before = await store.answerable(person, { now: later });
    expect(before.unsent.map((item) => item.draft_id)).toEqual([mine.draft_id]);
    expect(before.sent).toEqual([]);
    expect(before.unreadable).toEqual([]);
    expect([old.draft_id, other.draft_id]).not.toContain(mine.draft_id);
    await store.send(mine.draft_id, async (value) => ({ sent: true, dispatchId: value.dispatch_id }), {
      now: later,
    });
    const after = await store.answerable(person, { now: later });
    expect(after.unsent).toEqual([]);
    expect(after.sent.map((item) => item.draft_id)).toEqual([mine.draft_id]);
  });

  it("names a draft file it cannot read instead of passing over it in silence", async () => {
    const store = draftStore(folder);
    const now = new Date("2026-11-27T09:00:00Z");
    const draft = await store.keep(fields, { now, deliveredTo: person.route });
    const file = join(folder, `${draft.draft_id}.json`);
    await writeFile(file, "{ not json");
    const found = await store.answerable(person, { now });
    expect(found.unsent).toEqual([]);
    expect(found.unreadable).toEqual([{ file, reason: expect.stringContaining(file) }]);
  });

  it("answers an empty list when no draft was ever kept", async () => {
    const found = await draftStore(join(folder, "none")).answerable(person);
    expect(found).toEqual({ unsent: [], sent: [], unreadable: [] });
  });
});

import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ContractError, gstackLayout } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ActivityError } from "./activity-error";
import { createActivityLog } from "./activity-log";

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "activity-log-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const at = (iso: string) => () => new Date(iso);
const entry = (ts: string, fields: Record<string, unknown> = {}) => ({
  ts,
  project: "acme-widget",
  skill: "ship",
  duration: 60,
  ...fields,
});
const lines = async (week: string) =>
  (await readFile(gstackLayout(root).activity.week(week), "utf8")).split("\n").filter(Boolean);

describe("append", () => {
  it("writes each entry to the week of its own timestamp, across the ISO year boundary", async () => {
    const log = createActivityLog({ root, now: at("2027-01-03T12:00:00Z") });
    const result = await log.append([
      entry("2026-12-31T10:00:00Z"),
      entry("2027-01-01T09:00:00+01:00"),
      entry("2027-01-03T08:00:00Z"),
    ]);
    expect(result.weeks).toEqual(["2026-W53"]);
    expect(await lines("2026-W53")).toHaveLength(3);
    await log.append([entry("2027-01-04T00:00:00Z")], {});
    expect(await log.weeks()).toEqual(["2026-W53", "2027-W01"]);
  });

  it("validates every entry before writing any", async () => {
    const log = createActivityLog({ root, now: at("2026-04-01T12:00:00Z") });
    const error = await log
      .append([entry("2026-04-01T10:00:00Z"), entry("2026-04-01T10:00:00Z", { duration: "312" })])
      .catch((caught: unknown) => caught);
    expect(ContractError.isInstance(error)).toBe(true);
    expect((error as ContractError).message).toMatch(/entry 2: invalid activity-entry[\s\S]*duration/);
    expect(await log.weeks()).toEqual([]);
  });

  it("keeps closed weeks closed unless backfilling, with a day of grace after a week ends", async () => {
    const log = createActivityLog({ root, now: at("2026-04-06T00:30:00Z") });
    await log.append([entry("2026-04-05T23:59:00Z")]);
    expect(await lines("2026-W14")).toHaveLength(1);

    const late = createActivityLog({ root, now: at("2026-04-08T12:00:00Z") });
    await expect(late.append([entry("2026-04-05T23:58:00Z")])).rejects.toMatchObject({
      code: "past-week",
      message: expect.stringMatching(/2026-W14, a closed week.*backfill/),
    });
    const backfilled = await late.append([entry("2026-04-05T23:58:00Z"), entry("2026-04-05T23:59:00Z")], {
      backfill: true,
    });
    expect(backfilled.added).toHaveLength(1);
    expect(backfilled.skipped).toBe(1);
    const again = await late.append([entry("2026-04-05T23:58:00Z")], { backfill: true });
    expect(again).toMatchObject({ added: [], skipped: 1, weeks: [] });
    expect(await lines("2026-W14")).toHaveLength(2);
  });

  it("refuses entries dated in the future and entries too large for one safe append", async () => {
    const log = createActivityLog({ root, now: at("2026-04-01T12:00:00Z") });
    await expect(log.append([entry("2026-04-03T12:00:00Z")])).rejects.toMatchObject({ code: "future-entry" });
    await expect(
      log.append([entry("2026-04-01T11:00:00Z", { artifacts: ["x".repeat(5000)] })]),
    ).rejects.toSatisfy((error) => ActivityError.isInstance(error) && error.code === "entry-too-large");
  });

  it("keeps unknown fields through a write and a read", async () => {
    const log = createActivityLog({ root, now: at("2026-04-01T12:00:00Z") });
    await log.append([entry("2026-04-01T11:00:00Z", { model: "opus", tokens: 1200 })]);
    expect((await log.readWeek("2026-W14")).entries[0]).toMatchObject({ model: "opus", tokens: 1200 });
  });
});

describe("reading", () => {
  async function seed() {
    const log = createActivityLog({ root, now: at("2026-04-20T12:00:00Z") });
    await log.append(
      [
        entry("2026-03-31T10:00:00Z", { skill: "review" }),
        entry("2026-04-01T10:00:00Z", { project: "baku", dispatch: "wintermute" }),
        entry("2026-04-08T10:00:00Z", { project: "baku", skill: "qa" }),
        entry("2026-04-15T10:00:00Z"),
        entry("2026-04-20T10:00:00Z", { project: "baku" }),
      ],
      { backfill: true },
    );
    return log;
  }

  it("reads a week and reports a malformed line by file and line without losing the rest", async () => {
    const log = await seed();
    const file = gstackLayout(root).activity.week("2026-W14");
    await writeFile(file, `${await readFile(file, "utf8")}{not json\n{"ts":"2026-04-02T00:00:00Z"}\n`);
    const result = await log.readWeek("2026-W14");
    expect(result.entries.map((item) => item.ts)).toEqual(["2026-03-31T10:00:00Z", "2026-04-01T10:00:00Z"]);
    expect(result.problems).toHaveLength(2);
    expect(result.problems[0]).toMatchObject({
      file,
      line: 3,
      message: expect.stringMatching(/not valid JSON/),
    });
    expect(result.problems[1]).toMatchObject({ file, line: 4, message: expect.stringMatching(/project/) });
    await expect(log.readWeek("2026-W60")).rejects.toMatchObject({ code: "invalid-week" });
    expect((await log.query({ week: "2026-W14" })).problems.map((problem) => problem.line)).toEqual([3, 4]);
    // A filtered query skips lines that cannot hold the value it looks for, broken or not.
    expect((await log.query({ project: "baku" })).problems).toEqual([]);
  });

  it("answers week, last-N-weeks, range and field queries from only the files they need", async () => {
    const log = await seed();
    const week = await log.query({ week: "2026-W15" });
    expect(week.weeksRead).toEqual(["2026-W15"]);
    expect(week.entries.map((item) => item.skill)).toEqual(["qa"]);

    const recent = await log.query({ weeks: 2 });
    expect(recent.weeksRead).toEqual(["2026-W16", "2026-W17"]);
    expect(recent.entries).toHaveLength(2);

    const range = await log.query({
      since: new Date("2026-04-01T00:00:00Z"),
      until: new Date("2026-04-09T00:00:00Z"),
    });
    expect(range.weeksRead).toEqual(["2026-W14", "2026-W15"]);
    expect(range.entries.map((item) => item.ts)).toEqual(["2026-04-01T10:00:00Z", "2026-04-08T10:00:00Z"]);

    expect((await log.query({ project: "baku" })).entries).toHaveLength(3);
    expect((await log.query({ project: "baku", skill: "qa" })).entries).toHaveLength(1);
    expect((await log.query({ dispatch: "wintermute" })).entries.map((item) => item.project)).toEqual([
      "baku",
    ]);
    await expect(log.query({ week: "2026-W15", since: new Date("2026-05-01Z") })).rejects.toMatchObject({
      code: "invalid-range",
    });
  });

  it("summarises a span and finds when a project was last worked on", async () => {
    const log = await seed();
    const { summary } = await log.summarize({ week: "2026-W14" });
    expect(summary.projects.map((project) => project.project)).toEqual(["acme-widget", "baku"]);
    expect((await log.last({ project: "acme-widget" })).entry?.ts).toBe("2026-04-15T10:00:00Z");
    expect((await log.last({ project: "baku", skill: "qa" })).entry?.ts).toBe("2026-04-08T10:00:00Z");
    expect((await log.last({ project: "nobody" })).entry).toBeUndefined();
  });
});

describe("importTimeline", () => {
  async function timeline(slug: string, text: string) {
    const paths = gstackLayout(root).project(slug);
    await mkdir(paths.dir, { recursive: true });
    await writeFile(paths.timeline, text);
    return paths.timeline;
  }

  it("imports completed events once, reporting malformed lines by file and line", async () => {
    const acme = await timeline(
      "acme-widget",
      [
        '{"skill":"ship","event":"started","branch":"main","session":"a1","ts":"2026-03-02T10:00:00Z"}',
        '{"skill":"ship","event":"completed","branch":"main","outcome":"success","duration_s":"312","session":"a1","ts":"2026-03-02T10:05:12Z"}',
        "{broken",
        '{"skill":"review","event":"completed","duration_s":"12.5","session":"a2","ts":"2026-04-01T09:00:00Z"}',
        '{"skill":"review","event":"completed","duration_s":"95","session":"a2","ts":"2026-04-01T09:00:00Z"}',
        "",
      ].join("\n"),
    );
    await timeline(
      "baku",
      '{"skill":"qa","event":"completed","duration_s":"40","ts":"2026-04-14T08:00:00Z"}\n',
    );
    const log = createActivityLog({ root, now: at("2026-04-20T12:00:00Z") });

    const first = await log.importTimeline();
    expect(first.added).toBe(3);
    expect(first.problems.map((problem) => [problem.file, problem.line])).toEqual([
      [acme, 3],
      [acme, 4],
    ]);
    expect(first.problems[1]?.message).toMatch(/duration_s/);
    expect(first.projects).toEqual([
      expect.objectContaining({ project: "acme-widget", completed: 2, added: 2, skipped: 0 }),
      expect.objectContaining({ project: "baku", completed: 1, added: 1, skipped: 0 }),
    ]);
    const march = await log.readWeek("2026-W10");
    expect(march.entries).toEqual([
      {
        ts: "2026-03-02T10:05:12Z",
        project: "acme-widget",
        skill: "ship",
        duration: 312,
        source: "timeline",
        branch: "main",
        outcome: "success",
        session: "a1",
      },
    ]);

    const second = await log.importTimeline();
    expect(second).toMatchObject({ added: 0, skipped: 3 });
    expect((await log.query()).entries).toHaveLength(3);

    await timeline(
      "baku",
      '{"skill":"qa","event":"completed","duration_s":"40","ts":"2026-04-14T08:00:00Z"}\n{"skill":"ship","event":"completed","duration_s":"7","ts":"2026-04-15T08:00:00Z"}\n',
    );
    const one = await log.importTimeline({ project: "baku" });
    expect(one).toMatchObject({ added: 1, skipped: 1, projects: [{ project: "baku" }] });
  });

  it("previews with dryRun and refuses an unknown or unsafe project", async () => {
    await timeline(
      "baku",
      '{"skill":"qa","event":"completed","duration_s":"40","ts":"2026-04-14T08:00:00Z"}\n',
    );
    const log = createActivityLog({ root, now: at("2026-04-20T12:00:00Z") });
    expect((await log.importTimeline({ dryRun: true })).added).toBe(1);
    expect(await log.weeks()).toEqual([]);
    await expect(log.importTimeline({ project: "ghost" })).rejects.toMatchObject({ code: "no-timeline" });
    await expect(log.importTimeline({ project: "../etc" })).rejects.toSatisfy(ContractError.isInstance);
  });

  it("waits for a live importer and then says who holds the lock", async () => {
    const lock = gstackLayout(root).activity.importLock;
    await mkdir(gstackLayout(root).activity.dir, { recursive: true });
    await writeFile(lock, `${process.pid}\n`);
    await timeline(
      "baku",
      '{"skill":"qa","event":"completed","duration_s":"40","ts":"2026-04-14T08:00:00Z"}\n',
    );
    const log = createActivityLog({ root, now: at("2026-04-20T12:00:00Z"), lockTimeoutMs: 100 });
    await expect(log.importTimeline()).rejects.toMatchObject({
      code: "import-busy",
      message: expect.stringContaining(`pid ${process.pid}`),
    });
    expect(await log.weeks()).toEqual([]);
    expect(await readFile(lock, "utf8")).toBe(`${process.pid}\n`);
  });

  it("takes over an import lock left by a process that is gone", async () => {
    const lock = gstackLayout(root).activity.importLock;
    await mkdir(gstackLayout(root).activity.dir, { recursive: true });
    await writeFile(lock, "2147483646\n");
    await timeline(
      "baku",
      '{"skill":"qa","event":"completed","duration_s":"40","ts":"2026-04-14T08:00:00Z"}\n',
    );
    const log = createActivityLog({ root, now: at("2026-04-20T12:00:00Z") });
    expect((await log.importTimeline()).added).toBe(1);
    await expect(readFile(lock)).rejects.toMatchObject({ code: "ENOENT" });
  });
});

import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gstackLayout, isoWeekOf } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const cli = join(import.meta.dirname, "..", "dist", "cli.js");

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "activity-cli-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(args: string[], env: Record<string, string> = {}, stdin = ""): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [cli, ...args],
      { env: { ...process.env, GSTACK_HOME: root, NO_COLOR: "1", ...env } },
      (error, stdout, stderr) => {
        const code = error ? Number((error as { code?: number }).code ?? 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    child.stdin?.end(stdin);
  });
}

const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();

function expectOneLineError(result: Run, pattern: RegExp) {
  expect(result.code).toBe(2);
  expect(result.stdout).toBe("");
  expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
  expect(result.stderr).toMatch(pattern);
}

describe("gstack-activity", () => {
  it("logs work and answers what was shipped this week, in text and JSON", async () => {
    const logged = await run([
      "log",
      "--project",
      "acme-widget",
      "--skill",
      "ship",
      "--duration",
      "1h5m",
      "--artifacts",
      "pr:47,commit:abc1234",
      "--outcome",
      "success",
      "--session",
      "s1",
    ]);
    expect(logged).toMatchObject({ code: 0, stderr: "" });
    expect(logged.stdout).toMatch(/^Logged ship on acme-widget \(1h 5m\) in \d{4}-W\d{2}\.$/m);
    await run([
      "log",
      "--project",
      "baku",
      "--skill",
      "review",
      "--duration",
      "300",
      "--dispatch",
      "wintermute",
    ]);

    const week = await run(["week", "--json"]);
    expect(week.code).toBe(0);
    const parsed = JSON.parse(week.stdout) as {
      week: string;
      entries: { project: string; duration: number }[];
    };
    expect(parsed.week).toBe(isoWeekOf(new Date()));
    expect(parsed.entries.map((entry) => [entry.project, entry.duration])).toEqual([
      ["acme-widget", 3900],
      ["baku", 300],
    ]);

    const ship = await run(["ship"]);
    expect(ship.code).toBe(0);
    expect(ship.stdout).toMatch(/^Shipped in \d{4}-W\d{2} \(/);
    expect(ship.stdout).toContain("2 sessions · 1h 10m · 2 projects · PR #47 · 1 commit (abc1234)");
    expect(ship.stdout).toContain("acme-widget — 1 session, 1h 5m");
    expect(ship.stdout).toContain("dispatched by wintermute ×1");

    const table = await run(["week"]);
    expect(table.stdout).toMatch(/acme-widget\s+ship\s+1h 5m\s+success\s+pr:47 commit:abc1234/);

    const dispatched = await run(["query", "--dispatch", "wintermute", "--weeks", "2", "--json"]);
    expect((JSON.parse(dispatched.stdout) as { entries: unknown[] }).entries).toHaveLength(1);

    const last = await run(["last", "--project", "acme-widget"]);
    expect(last.stdout).toMatch(
      /^Last worked on acme-widget (just now|\d+ minutes? ago) \(.* UTC\): ship, success, 1h 5m\.$/m,
    );
    const never = await run(["last", "--project", "ghost", "--json"]);
    expect(JSON.parse(never.stdout)).toEqual({ entry: null, problems: [] });
  });

  it("uses --root over the environment, before or after the command", async () => {
    const other = join(root, "elsewhere");
    await run([
      "--root",
      other,
      "log",
      "--project",
      "p",
      "--skill",
      "qa",
      "--duration",
      "5",
      "--ts",
      minutesAgo(1),
    ]);
    expect((await run(["query", "--json"])).stdout).toContain('"entries": []');
    expect(JSON.parse((await run(["query", "--root", other, "--json"])).stdout).entries).toHaveLength(1);
  });

  it("refuses bad input with one line and a non-zero exit", async () => {
    expectOneLineError(await run(["week", "--week", "2026-W54"]), /"2026-W54" is not an ISO week/);
    expectOneLineError(await run(["query", "--since", "2026-02-30"]), /"2026-02-30" is not a date/);
    expectOneLineError(await run(["query", "--weeks", "two"]), /--weeks must be a whole number/);
    expectOneLineError(
      await run(["log", "--project", "no slug", "--skill", "x", "--duration", "5"]),
      /entry 1: invalid activity-entry: project must be a project slug/,
    );
    expectOneLineError(
      await run(["log", "--project", "p", "--skill", "x", "--duration", "soon"]),
      /"soon" is not a duration/,
    );
    expectOneLineError(
      await run(["log", "--project", "p", "--skill", "x", "--duration", "5", "--ts", "2020-01-06T10:00:00Z"]),
      /2020-W02, a closed week.*backfill/,
    );
    expectOneLineError(
      await run(["log", "--project", "p", "--duration", "5"]),
      /Missing required argument: --skill/,
    );
    expectOneLineError(await run(["query", "--projct", "p"]), /unknown option --projct/);
    expectOneLineError(await run(["frobnicate"]), /Unknown command frobnicate/);
    expectOneLineError(await run(["last"]), /--project, --skill or --dispatch/);
    expect((await run(["query", "--json"])).stdout).toContain('"entries": []');
  });

  it("backfills a closed week only when asked, and only once", async () => {
    const args = [
      "log",
      "--project",
      "p",
      "--skill",
      "x",
      "--duration",
      "5",
      "--ts",
      "2020-01-06T10:00:00Z",
      "--backfill",
    ];
    expect((await run(args)).stdout).toMatch(/Logged x on p \(5s\) in 2020-W02/);
    expect((await run(args)).stdout).toMatch(/Already recorded/);
    expect(JSON.parse((await run(["week", "--week", "2020-W02", "--json"])).stdout).entries).toHaveLength(1);
  });

  it("imports gstack timelines once and reports a malformed line by file and line", async () => {
    const paths = gstackLayout(root).project("acme-widget");
    await mkdir(paths.dir, { recursive: true });
    await writeFile(
      paths.timeline,
      [
        '{"skill":"ship","event":"started","session":"a1","ts":"2026-03-02T10:00:00Z"}',
        '{"skill":"ship","event":"completed","outcome":"success","duration_s":"312","session":"a1","ts":"2026-03-02T10:05:12Z"}',
        "not json",
        '{"skill":"qa","event":"completed","duration_s":"40","session":"a2","ts":"2026-03-03T08:00:00Z"}',
      ].join("\n"),
    );
    const first = await run(["import-timeline"]);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/acme-widget\s+2\s+2\s+0/);
    expect(first.stderr).toContain(`warning: ${paths.timeline}:3: `);
    const second = await run(["import-timeline", "--project", "acme-widget", "--json"]);
    expect(JSON.parse(second.stdout)).toMatchObject({ added: 0, skipped: 2, problems: [{ line: 3 }] });
    const file = gstackLayout(root).activity.week("2026-W10");
    expect((await readFile(file, "utf8")).trim().split("\n")).toHaveLength(2);

    const ship = await run(["ship", "--week", "2026-W10"]);
    expect(ship.stdout).toContain("acme-widget — 2 sessions, 6m");
    expect(ship.stdout).toContain("ship ×1 (5m) · qa ×1 (40s)");
    const range = await run(["ship", "--since", "2026-03-02", "--until", "2026-03-02"]);
    expect(range.stdout).toMatch(/^Shipped in Mon 2 Mar 2026 – Mon 2 Mar 2026\n1 session · 5m · 1 project/);
    const missing = await run(["import-timeline", "--project", "ghost"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no gstack timeline for project ghost/);
  });

  it("appends a batch of JSON Lines from stdin or a file, all or none", async () => {
    const now = Date.now();
    const line = (offset: number, fields = "") =>
      `{"ts":"${new Date(now - offset).toISOString()}","project":"p","skill":"ship","duration":${offset}${fields}}`;
    const batch = await run(["log", "--input", "-"], {}, `${line(3000)}\n${line(2000)}\n`);
    expect(batch).toMatchObject({ code: 0, stderr: "" });
    expect(batch.stdout).toMatch(/^Logged 2 entries in \d{4}-W\d{2}\.$/m);

    const file = join(root, "entries.jsonl");
    await writeFile(file, `${line(1000)}\n${line(500, ',"duration":"x"')}\n`);
    expectOneLineError(
      await run(["log", "--input", file]),
      new RegExp(`${file}:2: invalid activity-entry: duration`),
    );
    expectOneLineError(
      await run(["log", "--input", file, "--project", "p"]),
      /cannot be combined with --project/,
    );
    expect(JSON.parse((await run(["query", "--json"])).stdout).entries).toHaveLength(2);
  });

  it("prints help and exits 0", async () => {
    const help = await run(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("import-timeline");
    const version = await run(["--version"]);
    expect(version).toMatchObject({ code: 0, stdout: "0.1.0\n" });
    const commandHelp = await run(["query", "--help"]);
    expect(commandHelp.stdout).toContain("--dispatch");
  });
});

import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { GstackResultStatus } from "@gstack/contracts";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { gatePendingRows, writeGstackRun } from "./gstack-run-fixture";
import { readGstackRun } from "./read-gstack-run";

let base: string;
let cwd: string;
const now = new Date("2026-11-25T12:00:00Z");

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), "gstack-run-"));
  cwd = join(base, "repo");
  await mkdir(cwd);
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

function read(run: string, status: GstackResultStatus = "gate_pending", consumer = "dispatch-a") {
  return readGstackRun({ line: { skill: "autoplan", status, run }, cwd, consumer, now });
}

async function manifestOf(dir: string): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(join(dir, "run.json"), "utf8")) as Record<string, unknown>;
}

describe("readGstackRun", () => {
  it("reads a sound run: gstack's status, pending decisions, Critical and High findings, tasks", async () => {
    await writeGstackRun(join(cwd, ".gstack", "runs", "r1"));
    const summary = await read(".gstack/runs/r1");
    expect(summary).toEqual({
      skill: "autoplan",
      status: "gate_pending",
      run_dir: ".gstack/runs/r1",
      check: "valid",
      run: "r1",
      decisions_pending: [
        { id: "r1-d3", title: "Drop the session cache", options: ["a", "b"], recommended: null },
        { id: "r1-p1", title: "Approve the plan", options: ["a", "b", "c", "d", "e"], recommended: "a" },
      ],
      findings: [
        { id: "r1-eng-native-1", severity: "Critical", title: "Critical finding 1", disposition: "open" },
        { id: "r1-eng-native-2", severity: "High", title: "High finding 2", disposition: "open" },
      ],
      tasks: [
        {
          id: "r1-t1",
          title: "Escape the search query",
          status: "blocked_on_decision",
          acceptance: "pnpm test search",
        },
      ],
      acknowledged: true,
    });
  });

  it("acknowledges the run once, with the dispatch as consumer, keeping every other field", async () => {
    const dir = join(cwd, "run");
    const written = await writeGstackRun(dir);
    await read("run");
    const first = await readFile(join(dir, "run.json"), "utf8");
    expect(JSON.parse(first)).toEqual({
      ...written,
      consumed_by: [{ consumer: "dispatch-a", at: now.toISOString() }],
    });
    expect((await read("run")).acknowledged).toBe(true);
    expect(await readFile(join(dir, "run.json"), "utf8")).toBe(first);
    await read("run", "gate_pending", "dispatch-b");
    expect((await manifestOf(dir)).consumed_by).toEqual([
      { consumer: "dispatch-a", at: now.toISOString() },
      { consumer: "dispatch-b", at: now.toISOString() },
    ]);
  });

  it("takes an absolute run path inside the working directory", async () => {
    await writeGstackRun(join(cwd, "abs"));
    expect(await read(join(cwd, "abs"))).toMatchObject({ check: "valid", run: "r1" });
  });

  it("refuses a run directory outside the working directory, by path or by link, and writes nothing there", async () => {
    const elsewhere = join(base, "elsewhere");
    await writeGstackRun(elsewhere);
    const before = await readFile(join(elsewhere, "run.json"), "utf8");
    const byPath = await read("../elsewhere");
    expect(byPath).toMatchObject({ check: "outside", run_dir: "../elsewhere" });
    expect(byPath.problems?.[0]).toContain("outside the agent's working directory");
    expect(await read(elsewhere)).toMatchObject({ check: "outside" });
    await symlink(elsewhere, join(cwd, "linked"));
    const byLink = await read("linked");
    expect(byLink).toMatchObject({ check: "outside" });
    expect(byLink.problems?.[0]).toContain("symbolic link");
    expect(byLink.decisions_pending).toBeUndefined();
    expect(await readFile(join(elsewhere, "run.json"), "utf8")).toBe(before);
  });

  it("says so when the run directory or its run.json is missing", async () => {
    expect(await read("nowhere")).toMatchObject({ check: "missing" });
    await mkdir(join(cwd, "empty"));
    const summary = await read("empty");
    expect(summary).toMatchObject({ check: "missing" });
    expect(summary.problems?.[0]).toContain("run.json does not exist");
  });

  it("refuses a run.json that is not JSON or not a manifest", async () => {
    const dir = join(cwd, "bad");
    await mkdir(dir);
    await writeFile(join(dir, "run.json"), "{ not json");
    expect((await read("bad")).problems?.[0]).toMatch(/^run.json: not JSON/);
    await writeFile(join(dir, "run.json"), JSON.stringify({ schema_version: 2, run: "r1" }));
    const summary = await read("bad");
    expect(summary.check).toBe("invalid");
    expect(summary.problems?.[0]).toMatch(/^run.json: not a gstack run manifest \(schema_version/);
  });

  it("refuses an artifact changed after the run (sha256), and acknowledges nothing", async () => {
    const dir = join(cwd, "run");
    await writeGstackRun(dir);
    await writeFile(join(dir, "decisions.jsonl"), "");
    const summary = await read("run");
    expect(summary.check).toBe("invalid");
    expect(summary.problems).toEqual([
      expect.stringMatching(
        /^artifact decisions.jsonl \(decisions.jsonl\): sha256 .* changed after the run$/,
      ),
    ]);
    expect(summary.decisions_pending).toBeUndefined();
    expect(summary.acknowledged).toBeUndefined();
    expect((await manifestOf(dir)).consumed_by).toBeUndefined();
  });

  it("calls any single changed byte of an artifact tampering", async () => {
    const dir = join(cwd, "run");
    await writeGstackRun(dir);
    const original = await readFile(join(dir, "findings.jsonl"));
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: original.length - 1 }),
        fc.integer({ min: 1, max: 255 }),
        async (at, delta) => {
          const changed = Buffer.from(original);
          changed[at] = ((changed[at] ?? 0) + delta) % 256;
          await writeFile(join(dir, "findings.jsonl"), changed);
          const summary = await read("run");
          expect(summary.check).toBe("invalid");
          expect(summary.problems?.join("\n")).toContain("findings.jsonl");
        },
      ),
      { numRuns: 25 },
    );
  });

  it("refuses an artifact that is a symbolic link out of the run directory, or a path with '..'", async () => {
    const dir = join(cwd, "run");
    const manifest = await writeGstackRun(dir);
    const outside = join(base, "secret.jsonl");
    await writeFile(outside, await readFile(join(dir, "tasks.jsonl")));
    await rm(join(dir, "tasks.jsonl"));
    await symlink(outside, join(dir, "tasks.jsonl"));
    const linked = await read("run");
    expect(linked.check).toBe("invalid");
    expect(linked.problems?.[0]).toContain("a symbolic link to");
    expect(linked.problems?.[0]).toContain("outside the run directory");
    const artifacts = manifest.artifacts as Record<string, { path: string; sha256: string }>;
    await writeFile(
      join(dir, "run.json"),
      JSON.stringify({
        ...manifest,
        artifacts: { ...artifacts, "tasks.jsonl": { path: "../../secret.jsonl", sha256: "0" } },
      }),
    );
    expect((await read("run")).problems?.[0]).toContain("'..' leaves the run directory");
  });

  it("refuses a run.json that is a link out of the run directory", async () => {
    const elsewhere = join(base, "elsewhere");
    await writeGstackRun(elsewhere);
    await mkdir(join(cwd, "run"));
    await symlink(join(elsewhere, "run.json"), join(cwd, "run", "run.json"));
    expect(await read("run")).toMatchObject({ check: "invalid" });
  });

  it("refuses rows that break their schema or are not bound to the run, naming file and line", async () => {
    const rows = gatePendingRows("r1");
    await writeGstackRun(join(cwd, "run"), {
      decisions: [...rows.decisions, { ...rows.decisions[1], id: "r1-d9", gate_rev: 0 }],
      findings: [...rows.findings, { ...rows.findings[0], id: "other-1" }],
    });
    const summary = await read("run");
    expect(summary.check).toBe("invalid");
    expect(summary.problems).toEqual([
      expect.stringMatching(/^decisions.jsonl:4: not a gstack-decision row \(gate_rev: /),
      "findings.jsonl:5: id other-1 is not bound to run r1",
    ]);
  });

  it("refuses a run whose manifest disagrees with the result line", async () => {
    await writeGstackRun(join(cwd, "run"), { status: "complete" });
    const summary = await read("run", "gate_pending");
    expect(summary.check).toBe("invalid");
    expect(summary.problems).toEqual([
      "run.json says status complete, the GSTACK_RESULT line says gate_pending",
    ]);
  });
});

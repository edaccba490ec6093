import { createHash } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** A row of a JSONL artifact, as a test writes it. */
export type Row = Record<string, unknown>;

/** What a test gstack run holds; anything left out gets a small valid default. */
export interface GstackRunFixture {
  run?: string;
  status?: string;
  decisions?: Row[];
  findings?: Row[];
  tasks?: Row[];
  /** Extra manifest fields, merged last. */
  manifest?: Record<string, unknown>;
}

/** The rows an autoplan-like run that stopped at its gate writes. */
export function gatePendingRows(run: string): { decisions: Row[]; findings: Row[]; tasks: Row[] } {
  const decision = (label: string, extra: Row) => ({
    schema_version: 1,
    run,
    id: `${run}-${label}`,
    title: `Decision ${label}`,
    options: ["a", "b"],
    recommended: "a",
    kind: "approval",
    status: "pending",
    gate_rev: 1,
    ...extra,
  });
  const finding = (n: number, severity: string) => ({
    schema_version: 1,
    run,
    id: `${run}-eng-native-${n}`,
    phase: "eng",
    voice: "native",
    severity,
    title: `${severity} finding ${n}`,
    disposition: "open",
  });
  return {
    decisions: [
      decision("d1", { kind: "auto", status: "approved", chosen: "a" }),
      decision("d3", { title: "Drop the session cache", recommended: null }),
      decision("p1", { title: "Approve the plan", options: ["a", "b", "c", "d", "e"] }),
    ],
    findings: [finding(1, "Critical"), finding(2, "High"), finding(3, "Medium"), finding(4, "Informational")],
    tasks: [
      {
        schema_version: 2,
        run,
        id: `${run}-t1`,
        title: "Escape the search query",
        status: "blocked_on_decision",
        depends_on: [],
        findings: [`${run}-eng-native-1`],
        blocked_by: [`${run}-p1`],
        acceptance: "pnpm test search",
      },
    ],
  };
}

function jsonl(rows: Row[]): string {
  return rows.map((row) => `${JSON.stringify(row)}\n`).join("");
}

/**
 * Writes a gstack unattended run directory at `dir` the way gstack does: the JSONL artifacts,
 * a plan, and run.json listing each with its sha256. Returns the manifest written.
 */
export async function writeGstackRun(
  dir: string,
  fixture: GstackRunFixture = {},
): Promise<Record<string, unknown>> {
  const run = fixture.run ?? "r1";
  const defaults = gatePendingRows(run);
  const files: Record<string, string> = {
    "decisions.jsonl": jsonl(fixture.decisions ?? defaults.decisions),
    "findings.jsonl": jsonl(fixture.findings ?? defaults.findings),
    "tasks.jsonl": jsonl(fixture.tasks ?? defaults.tasks),
    "plan.md": "## Implementation plan\n\n1. Escape the query.\n",
  };
  await mkdir(dir, { recursive: true });
  const artifacts: Record<string, { path: string; sha256: string }> = {};
  for (const [name, text] of Object.entries(files)) {
    await writeFile(join(dir, name), text);
    artifacts[name] = { path: name, sha256: createHash("sha256").update(text).digest("hex") };
  }
  const manifest = {
    schema_version: 1,
    run,
    status: fixture.status ?? "gate_pending",
    required_phases: [],
    phases: {},
    artifacts,
    session_kind: "unattended",
    gate_rev: 1,
    wave: "kept as written",
    ...fixture.manifest,
  };
  await writeFile(join(dir, "run.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

import { createHash } from "node:crypto";
import { lstat, open, realpath } from "node:fs/promises";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import {
  type DocumentKind,
  type GstackResultLine,
  type GstackRunManifest,
  type GstackRunSummary,
  gstackDecisionSchema,
  gstackFindingSchema,
  gstackRunManifestSchema,
  gstackTaskSchema,
  writeFileAtomic,
} from "@gstack/contracts";

/** run.json is a manifest: anything near this size is not one. */
const MANIFEST_MAX_BYTES = 1024 * 1024;
/** Each artifact file read or hashed. */
const ARTIFACT_MAX_BYTES = 16 * 1024 * 1024;
/** Problems kept in the completion; the count of the rest is said. */
const PROBLEMS_KEPT = 20;

/** What reading a gstack run needs. */
export interface ReadGstackRunOptions {
  /** The agent's `GSTACK_RESULT:` line, parsed. */
  line: GstackResultLine;
  /** The agent's working directory: a run directory must lie inside it. */
  cwd: string;
  /** The dispatch id, recorded as the run's consumer once the run checks out. */
  consumer: string;
  /** The clock of the acknowledgement. */
  now: Date;
}

type RowSchema = typeof gstackDecisionSchema | typeof gstackFindingSchema | typeof gstackTaskSchema;

const ROW_FILES: ReadonlyArray<{ key: string; kind: DocumentKind; schema: () => RowSchema }> = [
  { key: "decisions.jsonl", kind: "gstack-decision", schema: () => gstackDecisionSchema },
  { key: "findings.jsonl", kind: "gstack-finding", schema: () => gstackFindingSchema },
  { key: "tasks.jsonl", kind: "gstack-task", schema: () => gstackTaskSchema },
];

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

async function realOrUndefined(path: string): Promise<string | undefined> {
  try {
    return await realpath(path);
  } catch {
    return undefined;
  }
}

/** Reads at most `limit` bytes; undefined with a reason when the file is larger or unreadable. */
async function readBounded(path: string, limit: number): Promise<{ bytes?: Buffer; problem?: string }> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, "r");
  } catch (error) {
    return { problem: (error as NodeJS.ErrnoException).code === "ENOENT" ? "not found" : String(error) };
  }
  try {
    const { size } = await handle.stat();
    if (size > limit) return { problem: `${size} bytes, over the ${limit} read` };
    const bytes = Buffer.alloc(size);
    await handle.read(bytes, 0, size, 0);
    return { bytes };
  } finally {
    await handle.close();
  }
}

function issuesOf(error: { issues: ReadonlyArray<{ path: PropertyKey[]; message: string }> }): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.map(String).join(".") || "(document)"}: ${issue.message}`)
    .join("; ");
}

/**
 * Reads and checks the run directory a `GSTACK_RESULT:` line names, the way gstack's own
 * completion check does, without running gstack: the directory must lie inside the agent's
 * working directory (symbolic links followed); `run.json` must be gstack's `run` manifest; every
 * listed artifact must resolve inside the run directory (no absolute path, no `..`, no link out)
 * and hash to its recorded sha256; the rows of `decisions.jsonl`, `findings.jsonl` and
 * `tasks.jsonl` must match their schemas with ids bound to the run. Never throws: whatever is
 * wrong becomes `check` and `problems`. A run that checks out is acknowledged once, with the
 * dispatch id as consumer in run.json's `consumed_by` (written atomically; repeated reads add
 * nothing), and its pending decisions, Critical and High findings and tasks are returned.
 */
export async function readGstackRun(options: ReadGstackRunOptions): Promise<GstackRunSummary> {
  const { line, cwd } = options;
  const base = { skill: line.skill, status: line.status, run_dir: line.run };
  const root = (await realOrUndefined(cwd)) ?? resolve(cwd);
  const named = resolve(root, line.run);
  if (!inside(root, named)) {
    return {
      ...base,
      check: "outside",
      problems: [`run=${line.run} is outside the agent's working directory ${root}`],
    };
  }
  const runDir = await realOrUndefined(named);
  if (runDir === undefined) {
    return { ...base, check: "missing", problems: [`the run directory ${named} does not exist`] };
  }
  if (!inside(root, runDir)) {
    return {
      ...base,
      check: "outside",
      problems: [`run=${line.run} leads through a symbolic link to ${runDir}, outside ${root}`],
    };
  }
  const manifestPath = join(runDir, "run.json");
  const manifestReal = await realOrUndefined(manifestPath);
  if (manifestReal === undefined) {
    return { ...base, check: "missing", problems: [`${manifestPath} does not exist`] };
  }
  if (!inside(runDir, manifestReal)) {
    return {
      ...base,
      check: "invalid",
      problems: [`run.json is a symbolic link to ${manifestReal}, outside the run directory`],
    };
  }
  const read = await readBounded(manifestReal, MANIFEST_MAX_BYTES);
  if (!read.bytes) return { ...base, check: "invalid", problems: [`run.json: ${read.problem}`] };
  let raw: unknown;
  try {
    raw = JSON.parse(read.bytes.toString("utf8"));
  } catch (error) {
    return { ...base, check: "invalid", problems: [`run.json: not JSON (${(error as Error).message})`] };
  }
  const parsedManifest = gstackRunManifestSchema.safeParse(raw);
  if (!parsedManifest.success) {
    return {
      ...base,
      check: "invalid",
      problems: [`run.json: not a gstack run manifest (${issuesOf(parsedManifest.error)})`],
    };
  }
  const manifest = parsedManifest.data;
  const problems: string[] = [];
  if (manifest.status !== line.status) {
    problems.push(`run.json says status ${manifest.status}, the GSTACK_RESULT line says ${line.status}`);
  }
  const rows = new Map<string, Record<string, unknown>[]>();
  for (const [key, entry] of Object.entries(manifest.artifacts)) {
    const artifact = await checkArtifact(runDir, key, entry, problems);
    const rowFile = ROW_FILES.find((file) => file.key === key);
    if (!artifact || !rowFile) continue;
    rows.set(key, checkRows(artifact, rowFile, manifest.run, entry.path, problems));
  }
  const summary: GstackRunSummary = { ...base, check: "valid", run: manifest.run };
  if (problems.length > 0) {
    const kept = problems.slice(0, PROBLEMS_KEPT);
    if (problems.length > PROBLEMS_KEPT) kept.push(`and ${problems.length - PROBLEMS_KEPT} more`);
    return { ...summary, check: "invalid", problems: kept };
  }
  const decisions = rows.get("decisions.jsonl") ?? [];
  const findings = rows.get("findings.jsonl") ?? [];
  const tasks = rows.get("tasks.jsonl") ?? [];
  const acknowledged = await acknowledge(manifestReal, raw as Record<string, unknown>, manifest, options);
  return {
    ...summary,
    decisions_pending: decisions
      .filter((row) => row.status === "pending")
      .map((row) => ({
        id: String(row.id),
        title: String(row.title),
        options: row.options as string[],
        recommended: (row.recommended as string | null) ?? null,
      })),
    findings: findings
      .filter((row) => row.severity === "Critical" || row.severity === "High")
      .map((row) => ({
        id: String(row.id),
        severity: row.severity as "Critical" | "High",
        title: String(row.title),
        ...(typeof row.disposition === "string" ? { disposition: row.disposition } : {}),
      })),
    tasks: tasks.map((row) => ({
      id: String(row.id),
      title: String(row.title),
      status: String(row.status),
      acceptance: String(row.acceptance),
    })),
    ...(acknowledged === undefined ? {} : { acknowledged }),
  };
}

/** The bytes of one listed artifact, when it is where it should be and hashes as recorded. */
async function checkArtifact(
  runDir: string,
  key: string,
  entry: { path: string; sha256: string },
  problems: string[],
): Promise<Buffer | undefined> {
  const where = `artifact ${key} (${entry.path})`;
  if (isAbsolute(entry.path) || entry.path.split(/[\\/]/).includes("..")) {
    problems.push(`${where}: an absolute path or '..' leaves the run directory`);
    return undefined;
  }
  const path = resolve(runDir, entry.path);
  let link = false;
  try {
    link = (await lstat(path)).isSymbolicLink();
  } catch {
    problems.push(`${where}: missing from the run directory`);
    return undefined;
  }
  const real = await realOrUndefined(path);
  if (real === undefined || !inside(runDir, real)) {
    problems.push(
      `${where}: ${link ? "a symbolic link" : "resolves"} to ${real ?? "nowhere"}, outside the run directory`,
    );
    return undefined;
  }
  const read = await readBounded(real, ARTIFACT_MAX_BYTES);
  if (!read.bytes) {
    problems.push(`${where}: ${read.problem}`);
    return undefined;
  }
  const actual = createHash("sha256").update(read.bytes).digest("hex");
  if (actual !== entry.sha256.toLowerCase()) {
    problems.push(
      `${where}: sha256 ${actual.slice(0, 12)}… is not the recorded ${entry.sha256.slice(0, 12)}…; changed after the run`,
    );
    return undefined;
  }
  return read.bytes;
}

/** The rows of a JSONL artifact that match their schema and are bound to the run. */
function checkRows(
  bytes: Buffer,
  file: (typeof ROW_FILES)[number],
  run: string,
  path: string,
  problems: string[],
): Record<string, unknown>[] {
  const rows: Record<string, unknown>[] = [];
  const seen = new Set<string>();
  const lines = bytes.toString("utf8").split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const schema = file.schema();
  lines.forEach((text, index) => {
    const where = `${path}:${index + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      problems.push(`${where}: not JSON (${(error as Error).message})`);
      return;
    }
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      problems.push(`${where}: not a ${file.kind} row (${issuesOf(parsed.error)})`);
      return;
    }
    const row = parsed.data as Record<string, unknown>;
    const id = String(row.id);
    if (!id.startsWith(`${run}-`) || row.run !== run) {
      problems.push(`${where}: id ${id} is not bound to run ${run}`);
      return;
    }
    if (seen.has(id)) problems.push(`${where}: id ${id} appears twice`);
    seen.add(id);
    rows.push(row);
  });
  return rows;
}

/**
 * Records the dispatch as the run's consumer in run.json, once: keeps every other field as
 * written, writes atomically, and changes nothing when it is already there. Undefined when the
 * write failed (the run was still read).
 */
async function acknowledge(
  manifestPath: string,
  raw: Record<string, unknown>,
  manifest: GstackRunManifest,
  options: ReadGstackRunOptions,
): Promise<boolean | undefined> {
  const consumers = manifest.consumed_by ?? [];
  if (consumers.some((entry) => entry.consumer === options.consumer)) return true;
  const updated = {
    ...raw,
    consumed_by: [
      ...(Array.isArray(raw.consumed_by) ? raw.consumed_by : []),
      { consumer: options.consumer, at: options.now.toISOString() },
    ],
  };
  try {
    await writeFileAtomic(manifestPath, `${JSON.stringify(updated, null, 2)}\n`);
    return true;
  } catch {
    return undefined;
  }
}

import { randomBytes } from "node:crypto";
import { link, mkdir, open, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import {
  ContractError,
  type GstackLayout,
  gstackLayout,
  type Handoff,
  type HandoffInput,
  type LayoutEnv,
  LockTimeoutError,
  parseValue,
  resolveGstackHome,
  withFileLock,
  writeFileAtomic,
} from "@gstack/contracts";
import { checkpointToHandoff, parseCheckpoint } from "./checkpoint-handoff";
import { HandoffError } from "./handoff-error";
import { assertHandoffId, candidateId, newHandoffId } from "./handoff-id";
import { assertResumePromptFits, formatHandoff, parseHandoffMarkdown } from "./handoff-markdown";
import { checkpointReference, parseHandoffReference } from "./handoff-reference";

/** Where the gstack state root is. */
export interface StoreOptions {
  /** gstack state root; defaults to `GSTACK_HOME`, `CLAUDE_PLUGIN_DATA` or `~/.gstack`. */
  root?: string;
  env?: LayoutEnv;
}

/** A handoff with where it lives. */
export interface HandoffRecord {
  /** The handoff id, or `checkpoint:{project}/{name}` for a gstack checkpoint. */
  ref: string;
  kind: "handoff" | "checkpoint";
  path: string;
  handoff: Handoff;
}

/** What to write: a handoff whose id and timestamp may be left to the store. */
export type NewHandoff = {
  [Key in keyof HandoffInput as Key extends "id" | "timestamp" ? never : Key]: HandoffInput[Key];
} & { id?: string; timestamp?: string };

/** Filters for {@link listHandoffs}. */
export interface HandoffFilter {
  project?: string;
  branch?: string;
  /** Only handoffs not yet picked up. */
  pending?: boolean;
  /** Include gstack checkpoints (default true). */
  checkpoints?: boolean;
}

/** A file that could not be read as a handoff; listing reports it and carries on. */
export interface HandoffProblem {
  path: string;
  message: string;
}

function layoutOf(options: StoreOptions): GstackLayout {
  return gstackLayout(options.root ?? resolveGstackHome(options.env ?? process.env));
}

async function readIfPresent(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

async function listFolder(path: string): Promise<string[]> {
  try {
    return (await readdir(path)).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}

/**
 * Creates `target` with `text`, atomically and without ever replacing a file: the text is
 * written and flushed to a temporary file in the same folder, then hard-linked to the
 * target name (which fails if the name exists; file systems without hard links get a
 * checked rename). Returns false when the name was taken.
 */
async function createExclusive(target: string, folder: string, text: string): Promise<boolean> {
  await mkdir(folder, { recursive: true });
  const temporary = join(folder, `.tmp-${process.pid}-${randomBytes(6).toString("hex")}`);
  const handle = await open(temporary, "wx", 0o644);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await link(temporary, target);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return false;
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP" && code !== "ENOSYS") throw error;
    // A file system without hard links: a checked rename, the closest it offers.
    if ((await readIfPresent(target)) !== undefined) return false;
    await rename(temporary, target);
    return true;
  } finally {
    await rm(temporary, { force: true });
  }
}

/**
 * Writes a new handoff file `handoff/{id}.md`. Validates first (a resume prompt over 4096
 * characters is refused, never cut). The id defaults to `{YYYYMMDD-HHMMSS}-{project}`; when a
 * file with that id exists, `-2`, `-3`, … are tried: nothing is ever overwritten. The
 * timestamp defaults to now and the status to `pending`.
 */
export async function writeHandoff(
  input: NewHandoff,
  options: StoreOptions & { now?: Date } = {},
): Promise<HandoffRecord> {
  const layout = layoutOf(options);
  const now = options.now ?? new Date();
  assertResumePromptFits(input.resume_prompt);
  const { id: requestedId, ...rest } = input;
  const handoff = parseValue(
    "handoff",
    { ...rest, timestamp: input.timestamp ?? now.toISOString() },
    {
      source: "new handoff",
    },
  );
  const baseId = assertHandoffId(requestedId ?? newHandoffId(handoff.project, new Date(handoff.timestamp)));
  for (let attempt = 0; attempt < 1000; attempt++) {
    const id = candidateId(baseId, attempt);
    const path = layout.handoff.file(id);
    const stored = { id, ...handoff };
    if (await createExclusive(path, layout.handoff.dir, formatHandoff(stored))) {
      return { ref: id, kind: "handoff", path, handoff: stored };
    }
  }
  throw new HandoffError(
    "busy",
    `could not find a free id near ${JSON.stringify(baseId)} in ${layout.handoff.dir}`,
  );
}

async function readHandoffFile(layout: GstackLayout, id: string): Promise<HandoffRecord> {
  const path = layout.handoff.file(id);
  const text = await readIfPresent(path);
  if (text === undefined)
    throw new HandoffError("not-found", `no handoff ${JSON.stringify(id)} (looked for ${path})`);
  const handoff = parseHandoffMarkdown(text, path);
  if (handoff.id !== undefined && handoff.id !== id) {
    throw new HandoffError(
      "malformed-file",
      `${path}: frontmatter id ${JSON.stringify(handoff.id)} differs from the file name`,
    );
  }
  return { ref: id, kind: "handoff", path, handoff: { ...handoff, id } };
}

async function readCheckpointFile(
  layout: GstackLayout,
  project: string,
  name: string,
): Promise<HandoffRecord> {
  const folder = layout.project(project).checkpoints;
  const path = join(folder, `${name}.md`);
  if (!/^[A-Za-z0-9._-]+$/.test(name)) {
    throw new HandoffError("invalid-reference", `${JSON.stringify(name)} is not a checkpoint file name`);
  }
  const text = await readIfPresent(path);
  if (text === undefined)
    throw new HandoffError("not-found", `no checkpoint ${JSON.stringify(name)} (looked for ${path})`);
  const fileTime = (await stat(path)).mtime;
  const handoff = checkpointToHandoff(parseCheckpoint(text, path), { project, path, name, fileTime });
  return { ref: checkpointReference(project, name), kind: "checkpoint", path, handoff };
}

/** Reads one handoff by id, or a checkpoint by `checkpoint:{project}/{name}`. */
export async function readHandoff(reference: string, options: StoreOptions = {}): Promise<HandoffRecord> {
  const layout = layoutOf(options);
  const parsed = parseHandoffReference(reference);
  return parsed.kind === "handoff"
    ? readHandoffFile(layout, parsed.id)
    : readCheckpointFile(layout, parsed.project, parsed.name);
}

function problemOf(path: string, error: unknown): HandoffProblem {
  if (HandoffError.isInstance(error) || ContractError.isInstance(error)) {
    return { path, message: error.message.replaceAll("\n", " ") };
  }
  throw error;
}

function newestFirst(left: HandoffRecord, right: HandoffRecord): number {
  const difference = Date.parse(right.handoff.timestamp) - Date.parse(left.handoff.timestamp);
  return difference !== 0 ? difference : right.ref.localeCompare(left.ref);
}

/**
 * Lists handoff files and (unless `checkpoints: false`) gstack checkpoints, newest first.
 * A checkpoint already imported as a handoff (its path is a handoff's `source`) is listed
 * once, as that handoff. Unreadable files are returned as `problems`, never dropped silently.
 */
export async function listHandoffs(
  filter: HandoffFilter = {},
  options: StoreOptions = {},
): Promise<{ records: HandoffRecord[]; problems: HandoffProblem[] }> {
  const layout = layoutOf(options);
  const records: HandoffRecord[] = [];
  const problems: HandoffProblem[] = [];
  for (const file of await listFolder(layout.handoff.dir)) {
    if (file.startsWith(".") || !file.endsWith(".md")) continue;
    const id = file.slice(0, -3);
    try {
      records.push(await readHandoffFile(layout, id));
    } catch (error) {
      problems.push(problemOf(join(layout.handoff.dir, file), error));
    }
  }
  if (filter.checkpoints !== false) {
    const imported = new Set(records.map((record) => record.handoff.source).filter(Boolean));
    const projects = filter.project !== undefined ? [filter.project] : await listFolder(layout.projects);
    for (const project of projects) {
      let folder: string;
      try {
        folder = layout.project(project).checkpoints;
      } catch {
        continue;
      }
      for (const file of await listFolder(folder)) {
        if (file.startsWith(".") || !file.endsWith(".md")) continue;
        if (imported.has(join(folder, file))) continue;
        try {
          records.push(await readCheckpointFile(layout, project, file.slice(0, -3)));
        } catch (error) {
          problems.push(problemOf(join(folder, file), error));
        }
      }
    }
  }
  const selected = records.filter(
    (record) =>
      (filter.project === undefined || record.handoff.project === filter.project) &&
      (filter.branch === undefined || record.handoff.branch === filter.branch) &&
      (!filter.pending || record.handoff.status === "pending"),
  );
  return { records: selected.sort(newestFirst), problems };
}

/** The newest handoff matching the filter (checkpoints included), or undefined. */
export async function findLatestHandoff(
  filter: HandoffFilter,
  options: StoreOptions = {},
): Promise<HandoffRecord | undefined> {
  return (await listHandoffs(filter, options)).records[0];
}

/** How long a picker waits for another picker of the same handoff before reporting `busy`. */
const PICKUP_LOCK_TIMEOUT_MS = 5_000;

/** Runs `work` while holding `.{name}.lock` in the handoff folder, so two pickers never both win. */
async function withLock<T>(layout: GstackLayout, name: string, work: () => Promise<T>): Promise<T> {
  try {
    return await withFileLock(join(layout.handoff.dir, `.${name}.lock`), work, {
      timeoutMs: PICKUP_LOCK_TIMEOUT_MS,
    });
  } catch (error) {
    if (!LockTimeoutError.isInstance(error)) throw error;
    const holder =
      error.holderPid === undefined ? "another process" : `another process (pid ${error.holderPid})`;
    throw new HandoffError("busy", `${name} is being picked up by ${holder}; try again`, { cause: error });
  }
}

/**
 * Marks a handoff picked up (`status: picked_up`, `picked_up_at`, `picked_up_by`) with an
 * atomic rewrite of its file. A checkpoint is imported as a new handoff file marked picked
 * up (gstack's own file is never changed), so it leaves the pending list. Picking up twice
 * is an error that says by whom and when.
 */
export async function pickUpHandoff(
  reference: string,
  pickup: { by: string; now?: Date },
  options: StoreOptions = {},
): Promise<HandoffRecord> {
  const layout = layoutOf(options);
  const parsed = parseHandoffReference(reference);
  const now = (pickup.now ?? new Date()).toISOString();
  const lockName = parsed.kind === "handoff" ? parsed.id : `checkpoint-${parsed.project}-${parsed.name}`;
  return withLock(layout, lockName.replace(/[^A-Za-z0-9_.-]/g, "-"), async () => {
    let record = await readHandoff(reference, options);
    if (record.kind === "checkpoint") {
      const imported = (
        await listHandoffs({ project: record.handoff.project, checkpoints: false }, options)
      ).records.find((candidate) => candidate.handoff.source === record.path);
      if (imported) record = imported;
    }
    if (record.handoff.status === "picked_up") {
      throw new HandoffError(
        "already-picked-up",
        `${record.ref} was already picked up${record.handoff.picked_up_by ? ` by ${record.handoff.picked_up_by}` : ""}${record.handoff.picked_up_at ? ` at ${record.handoff.picked_up_at}` : ""}`,
      );
    }
    const picked = {
      ...record.handoff,
      status: "picked_up" as const,
      picked_up_at: now,
      picked_up_by: pickup.by,
    };
    if (record.kind === "checkpoint") {
      const { id: _none, ...fromCheckpoint } = picked;
      return writeHandoff(fromCheckpoint, options);
    }
    const validated = parseValue("handoff", picked, { source: record.path });
    await writeFileAtomic(record.path, formatHandoff(validated));
    return { ...record, handoff: validated };
  });
}

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { chmod, mkdir, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import { waitUntil } from "../../../../vitest.load-budget";
import { bundledModule } from "../test-support";

/**
 * For the landing's kill tests: a repository whose landing changes many files in every way git
 * knows (changed, added, removed, made executable, links, a file becoming a folder and back, a
 * large file), landings killed with SIGKILL at chosen moments, and checkouts compared byte for
 * byte with a commit.
 */

const git = (repo: string, ...args: string[]) =>
  execFileSync("git", ["-C", repo, ...args], { encoding: "utf8", maxBuffer: 256 * 1024 * 1024 }).trim();
const commit = (repo: string, ...args: string[]) =>
  git(repo, "-c", "user.name=t", "-c", "user.email=t@t", ...args);

/** A small seeded random source (mulberry32): the same seed gives the same files and moments. */
export function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Bytes that do not compress away, so a large file takes git a while to write. */
function noise(random: () => number, size: number): Buffer {
  const bytes = Buffer.alloc(size);
  let word = Math.floor(random() * 2 ** 32);
  for (let at = 0; at < size; at += 4) {
    word = (Math.imul(word, 1_664_525) + 1_013_904_223) >>> 0;
    bytes.writeUInt32LE(word, Math.min(at, size - 4));
  }
  return bytes;
}

type Files = Map<string, { content: Buffer; mode: "100644" | "100755" | "120000" }>;

/**
 * Two commits on `main` of `repo`'s history, `before` (checked out) and `after`, whose
 * difference touches about `files` paths. Returns both commit ids and their trees.
 */
export async function manyFileChange(
  repo: string,
  options: { files: number; seed: number; largeBytes?: number; extra?: Record<string, string | Buffer> },
): Promise<{ before: string; after: string }> {
  const random = seeded(options.seed);
  const before: Files = new Map();
  const folders = Math.max(1, Math.round(options.files / 40));
  for (let index = 0; index < options.files; index += 1) {
    const path = `d${index % folders}/f${index}.txt`;
    before.set(path, { content: Buffer.from(`file ${index}\n${"x".repeat(index % 200)}\n`), mode: "100644" });
  }
  before.set("df", { content: Buffer.from("a file, then a folder\n"), mode: "100644" });
  before.set("fd/inside.txt", { content: Buffer.from("a folder, then a file\n"), mode: "100644" });
  before.set("link", { content: Buffer.from("d0"), mode: "120000" });
  if (options.largeBytes)
    before.set("large.bin", { content: noise(random, options.largeBytes), mode: "100644" });
  const after: Files = new Map();
  for (const [path, file] of before) {
    const roll = random();
    if (path === "df" || path === "fd/inside.txt") continue;
    if (path === "link") after.set(path, { content: Buffer.from("d1"), mode: "120000" });
    else if (path === "large.bin")
      after.set(path, { content: noise(random, file.content.length + 4096), mode: "100644" });
    else if (roll < 0.4)
      after.set(path, { content: Buffer.from(`${file.content}changed ${roll}\n`), mode: file.mode });
    else if (roll < 0.55) continue;
    else if (roll < 0.58) after.set(path, { content: file.content, mode: "100755" });
    else after.set(path, file);
  }
  for (let index = 0; index < Math.round(options.files * 0.15); index += 1) {
    after.set(`new${index % 5}/n${index}.txt`, { content: Buffer.from(`new ${index}\n`), mode: "100644" });
  }
  after.set("df/inside.txt", { content: Buffer.from("now a folder\n"), mode: "100644" });
  after.set("fd", { content: Buffer.from("now a file\n"), mode: "100644" });
  for (const [path, content] of Object.entries(options.extra ?? {})) {
    after.set(path, { content: Buffer.from(content), mode: "100644" });
  }
  const write = async (files: Files) => {
    for (const name of await readdir(repo))
      if (name !== ".git") await rm(join(repo, name), { recursive: true });
    for (const [path, file] of files) {
      await mkdir(dirname(join(repo, path)), { recursive: true });
      if (file.mode === "120000") await symlink(file.content.toString(), join(repo, path));
      else {
        await writeFile(join(repo, path), file.content);
        await chmod(join(repo, path), file.mode === "100755" ? 0o755 : 0o644);
      }
    }
    git(repo, "add", "-A");
  };
  await write(before);
  commit(repo, "commit", "-q", "-m", "before");
  const first = git(repo, "rev-parse", "HEAD");
  await write(after);
  commit(repo, "commit", "-q", "-m", "after");
  const second = git(repo, "rev-parse", "HEAD");
  git(repo, "reset", "-q", "--hard", first);
  return { before: first, after: second };
}

/**
 * Commits on top of `parent` whose trees alternate between `trees[0]` and `trees[1]`, one per
 * round: each is a fast-forward of the one before that changes every path of the change.
 */
export function alternatingCommits(
  repo: string,
  parent: string,
  trees: [string, string],
  count: number,
): string[] {
  const commits: string[] = [];
  let previous = parent;
  for (let index = 0; index < count; index += 1) {
    const tree = git(repo, "rev-parse", `${trees[(index + 1) % 2]}^{tree}`);
    previous = commit(repo, "commit-tree", tree, "-p", previous, "-m", `round ${index + 1}`);
    commits.push(previous);
  }
  return commits;
}

/** A blob's id as git computes it. */
function blobId(bytes: Buffer): string {
  return createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
}

/** Every file of a working tree (not `.git`) as "mode blob-id", and its folders. */
export function workingFiles(repo: string): { files: Map<string, string>; folders: Set<string> } {
  const files = new Map<string, string>();
  const folders = new Set<string>();
  const walk = (folder: string) => {
    for (const name of readdirSync(folder)) {
      if (folder === repo && name === ".git") continue;
      const path = join(folder, name);
      const key = relative(repo, path);
      const info = lstatSync(path);
      if (info.isDirectory()) {
        folders.add(key);
        walk(path);
      } else if (info.isSymbolicLink()) files.set(key, `120000 ${blobId(Buffer.from(readlinkSync(path)))}`);
      else files.set(key, `${info.mode & 0o100 ? "100755" : "100644"} ${blobId(readFileSync(path))}`);
    }
  };
  walk(repo);
  return { files, folders };
}

/** The files and folders of a commit's tree, as `workingFiles` gives them. */
export function treeFiles(
  repo: string,
  commitId: string,
): { files: Map<string, string>; folders: Set<string> } {
  const files = new Map<string, string>();
  const folders = new Set<string>();
  for (const entry of git(repo, "ls-tree", "-r", "-z", commitId).split("\0")) {
    const match = /^(\d+) blob ([0-9a-f]+)\t(.+)$/s.exec(entry);
    if (!match) continue;
    files.set(match[3] as string, `${match[1]} ${match[2]}`);
    for (let folder = dirname(match[3] as string); folder !== "."; folder = dirname(folder))
      folders.add(folder);
  }
  return { files, folders };
}

/**
 * Where the checkout stands, exactly: "at <commit>" when HEAD's branch, the index and every file
 * and folder of the working tree are that commit's (nothing else there, `git status` clean, no
 * lock and no landing file left beside the index); else what differs.
 */
export function checkoutState(repo: string, commits: string[]): string {
  const head = git(repo, "rev-parse", "HEAD");
  const seen = workingFiles(repo);
  const leftovers = readdirSync(join(repo, ".git")).filter(
    (name) => name.endsWith(".lock") || (name.startsWith("gstack-") && !name.endsWith("-saved")),
  );
  for (const candidate of commits) {
    if (head !== candidate) continue;
    const expected = treeFiles(repo, candidate);
    const problems: string[] = [];
    for (const [path, entry] of expected.files) {
      const there = seen.files.get(path);
      if (there !== entry) problems.push(`${path}: ${there ?? "missing"} instead of ${entry}`);
    }
    for (const path of seen.files.keys())
      if (!expected.files.has(path)) problems.push(`${path}: not in the commit`);
    for (const folder of seen.folders)
      if (!expected.folders.has(folder)) problems.push(`${folder}/: not in the commit`);
    const status = git(repo, "status", "--porcelain", "--untracked-files=all");
    if (status) problems.push(`git status: ${status.split("\n").slice(0, 5).join(" | ")}`);
    const index = git(repo, "diff-index", "--cached", "--name-only", candidate);
    if (index) problems.push(`index differs: ${index.split("\n").slice(0, 5).join(" ")}`);
    if (leftovers.length > 0) problems.push(`left in .git: ${leftovers.join(", ")}`);
    return problems.length === 0
      ? `at ${candidate}`
      : `HEAD at ${candidate} but ${problems.slice(0, 8).join("; ")}`;
  }
  return `HEAD at ${head}, none of ${commits.join(", ")}`;
}

/**
 * What a kill left at the paths a change touches, counted: at the version before, after,
 * absent where both sides have it, part of one side (a prefix, empty included), or other.
 */
export function killedState(repo: string, before: string, after: string): Record<string, number> {
  const from = treeFiles(repo, before).files;
  const to = treeFiles(repo, after).files;
  const counts: Record<string, number> = { before: 0, after: 0, hole: 0, partial: 0, other: 0 };
  const blobs = (entry: string | undefined) =>
    entry && !entry.startsWith("120000")
      ? execFileSync("git", ["-C", repo, "cat-file", "blob", entry.split(" ")[1] as string], {
          maxBuffer: 1 << 30,
        })
      : undefined;
  for (const path of new Set([...from.keys(), ...to.keys()])) {
    const old = from.get(path);
    const next = to.get(path);
    if (old === next) continue;
    let info: ReturnType<typeof lstatSync> | undefined;
    try {
      info = lstatSync(join(repo, path));
    } catch {
      info = undefined;
    }
    if (!info || info.isDirectory()) {
      if (!old) counts.before = (counts.before ?? 0) + 1;
      else if (!next) counts.after = (counts.after ?? 0) + 1;
      else counts.hole = (counts.hole ?? 0) + 1;
      continue;
    }
    const entry = info.isSymbolicLink()
      ? `120000 ${blobId(Buffer.from(readlinkSync(join(repo, path))))}`
      : `${info.mode & 0o100 ? "100755" : "100644"} ${blobId(readFileSync(join(repo, path)))}`;
    if (entry === old) counts.before = (counts.before ?? 0) + 1;
    else if (entry === next) counts.after = (counts.after ?? 0) + 1;
    else if (info.isFile()) {
      const bytes = readFileSync(join(repo, path));
      const prefix = [blobs(old), blobs(next)].some(
        (blob) =>
          blob !== undefined && blob.length > bytes.length && blob.subarray(0, bytes.length).equals(bytes),
      );
      if (prefix) counts.partial = (counts.partial ?? 0) + 1;
      else counts.other = (counts.other ?? 0) + 1;
    } else counts.other = (counts.other ?? 0) + 1;
  }
  return counts;
}

/** A landing of `id` in a child process of its own group, told when to go, killed on demand. */
export async function landingChild(
  base: string,
  root: string,
  id: string,
  options: { limitFileBytes?: number } = {},
): Promise<{
  go(): number;
  kill(): void;
  exited: Promise<{ code: number | null; signal: string | null }>;
  stderr(): string;
}> {
  const module = (path: string) =>
    JSON.stringify(pathToFileURL(join(import.meta.dirname, "..", "..", path)).href);
  // Landing lives in @gstack/daemon-client; the child loads its source (bundled), as the daemon's tests do.
  const script = join(base, `land-${Math.random().toString(36).slice(2)}.mjs`);
  await writeFile(
    script,
    `import { landDispatch } from ${JSON.stringify(bundledModule("../../packages/daemon-client/src/land/land.ts"))};
import { gstackLayout } from ${module("node_modules/@gstack/contracts/dist/index.js")};
process.stdout.write("ready\\n");
process.stdin.once("data", async () => {
  try {
    await landDispatch(gstackLayout(${JSON.stringify(root)}), ${JSON.stringify(id)});
  } catch (error) {
    process.stderr.write(String(error && error.message) + "\\n");
    process.exit(3);
  }
  process.exit(0);
});
`,
  );
  // With a limit, through the shell's `ulimit -f` (in 512-byte blocks), which the process and
  // every git it starts inherit.
  const command = options.limitFileBytes
    ? [
        "sh",
        "-c",
        `ulimit -f ${Math.floor(options.limitFileBytes / 512)} && exec "$@"`,
        "sh",
        process.execPath,
      ]
    : [process.execPath];
  const child: ChildProcess = spawn(
    command[0] as string,
    [...command.slice(1), "--enable-source-maps", script],
    {
      cwd: join(import.meta.dirname, "..", ".."),
      stdio: ["pipe", "pipe", "pipe"],
      // Its own process group, so the kill takes the git it started too, as a crash of the
      // daemon's service (or of `gstack-dispatch land`) would.
      detached: true,
    },
  );
  let errors = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    errors += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  const ready = await Promise.race([
    new Promise<boolean>((resolve) => child.stdout?.once("data", () => resolve(true))),
    exited.then(() => false),
  ]);
  if (!ready) throw new Error(`the landing process ended before it was ready: ${errors}`);
  return {
    go: () => {
      child.stdin?.write("go\n");
      return performance.now();
    },
    kill: () => {
      try {
        process.kill(-(child.pid as number), "SIGKILL");
      } catch {}
    },
    exited,
    stderr: () => errors,
  };
}

/** Waits until `path` exists (a marker a filter writes, a lock git takes). */
export function untilExists(path: string, what: string, idleMs = 60_000): Promise<true> {
  return waitUntil(
    () => {
      try {
        lstatSync(path);
        return true as const;
      } catch {
        return undefined;
      }
    },
    { idleMs, what },
  );
}

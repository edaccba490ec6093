/**
 * The review page of a finished dispatch whose diff against its base is BENCH_DIFF_LINES (default
 * 5,000) added lines over BENCH_FILES (default 50) files, served by the page's own handler on a real
 * loopback HTTP server and fetched as a browser fetches it, against the least work it needs, in
 * the same run:
 *   first render  the first request after start (key read, state, git log, git diff, HTML),
 *                 against `git diff` of the same range alone; the goal is 1 s or less
 *   later render  the median of BENCH_RUNS (default 10) more, against the same
 *   bytes         served, against the bytes of the diff itself
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { gstackLayout } from "@gstack/contracts";
import { resolvePluginSettings } from "../src/plugin-settings";
import { reviewLinks } from "../src/review/links";
import { reviewHandler } from "../src/review/route";

const run = promisify(execFile);
const lines = Number(process.env.BENCH_DIFF_LINES ?? 5_000);
const files = Number(process.env.BENCH_FILES ?? 50);
const runs = Number(process.env.BENCH_RUNS ?? 10);

const base = await mkdtemp(join(tmpdir(), "gstack-review-bench-"));
const repo = join(base, "repo");
const root = join(base, "gstack");
const git = (...args: string[]) => run("git", ["-C", repo, ...args], { maxBuffer: 1 << 26 });
await mkdir(repo, { recursive: true });
await git("init", "-q", "-b", "main");
await git("config", "user.name", "Bench");
await git("config", "user.email", "bench@example.invalid");
await writeFile(join(repo, "README.md"), "# bench\n");
await git("add", ".");
await git("commit", "-q", "-m", "base");
const baseSha = (await git("rev-parse", "HEAD")).stdout.trim();
await git("checkout", "-q", "-b", "gstack/dispatch-bench");
const perFile = Math.ceil(lines / files);
for (let file = 0; file < files; file += 1) {
  const body = Array.from(
    { length: perFile },
    (_, line) => `export const value${line} = "file ${file} line ${line} <with> & "markup"";`,
  );
  await writeFile(join(repo, `src-${file}.ts`), `${body.join("\n")}\n`);
}
await git("add", ".");
await git("commit", "-q", "-m", "A large change");
await git("checkout", "-q", "main");

const id = "dispatch-20261127T080000-0bench00";
const layout = gstackLayout(root);
await mkdir(layout.dispatch.sessionDir(id), { recursive: true });
const now = new Date().toISOString();
await writeFile(
  join(layout.dispatch.sessionDir(id), "state.json"),
  JSON.stringify({
    id,
    project: "bench",
    project_dir: repo,
    agent: "claude",
    status: "finished",
    claimed_file: join(base, "none.json"),
    first_seen: now,
    queued_at: now,
    attempt: 1,
    retries: 0,
    include_learnings: false,
    branch: "gstack/dispatch-bench",
    base_sha: baseSha,
    worktree: {
      repo,
      path: repo,
      cwd: repo,
      branch: "gstack/dispatch-bench",
      base: "main",
      base_sha: baseSha,
      created_at: now,
    },
    updated_at: now,
  }),
);
await mkdir(layout.dispatch.completed, { recursive: true });
await writeFile(
  layout.dispatch.completedJson(id),
  JSON.stringify({
    dispatch_id: id,
    status: "completed",
    duration: 60,
    commits: 1,
    landing: "awaiting",
    cost_usd: 0.4,
    budget_usd: 5,
  }),
);

const settings = resolvePluginSettings(
  { gstackHome: root, stateDir: join(base, "state") },
  join(base, "openclaw"),
);
const server = createServer((request, response) => {
  void handler(request, response);
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const address = server.address();
const origin = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
const links = reviewLinks(settings.review, () => origin);
const handler = reviewHandler(settings, links);
const link = await links.dispatch(id);

const diffStart = performance.now();
const diff = (await git("diff", "--no-color", `${baseSha}..gstack/dispatch-bench`)).stdout;
const diffMs = performance.now() - diffStart;

const fetchPage = async () => {
  const start = performance.now();
  const response = await fetch(link);
  const body = await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`the page answered ${response.status}`);
  return { ms: performance.now() - start, bytes: body.byteLength };
};
const first = await fetchPage();
const later: number[] = [];
for (let index = 0; index < runs; index += 1) later.push((await fetchPage()).ms);
later.sort((a, b) => a - b);
const median = later[Math.floor(later.length / 2)] ?? 0;
const diffBytes = Buffer.byteLength(diff);

console.log(
  `review page, ${lines} diff lines in ${files} files: first render ${first.ms.toFixed(0)} ms (goal ≤ 1000 ms) = ${(first.ms / diffMs).toFixed(1)}× git diff alone (${diffMs.toFixed(0)} ms)`,
);
console.log(
  `review page: later renders, median of ${runs}, ${median.toFixed(0)} ms = ${(median / diffMs).toFixed(1)}× git diff alone`,
);
console.log(
  `review page: ${first.bytes} bytes served = ${(first.bytes / diffBytes).toFixed(2)}× the diff's own ${diffBytes} bytes`,
);
server.close();
await rm(base, { recursive: true, force: true });
if (first.ms > 1000) process.exitCode = 1;

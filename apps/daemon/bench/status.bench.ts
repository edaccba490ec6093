/**
 * `gstack-dispatch status` (text and --json) with BENCH_STATUS_WORKTREES (default 300) finished
 * dispatches waiting to be landed or discarded, each a real worktree of BENCH_STATUS_FILES files
 * (default 200), each with its completion report, as ratios to `node -e 0` in the same run (run
 * pnpm build first), with the load average at each figure. Also prints what measuring one
 * worktree costs, which happens once, when its dispatch finishes. The first status after the
 * dispatches finished writes the summary of finished sessions; the runs measured read it.
 */
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { gstackLayout } from "@gstack/contracts";
import type { WorktreeRecord } from "@gstack/daemon-client";
import { measureWorktree, type SessionState, writeState } from "@gstack/daemon-client";
import { benchStartUp } from "../../../scripts/bench-start-up";

const count = Number(process.env.BENCH_STATUS_WORKTREES ?? 300);
const files = Number(process.env.BENCH_STATUS_FILES ?? 200);

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-C", cwd, "-c", "user.name=b", "-c", "user.email=b@b", ...args], {
    encoding: "utf8",
  }).trim();

export async function benchStatus(): Promise<void> {
  const base = await mkdtemp(join(tmpdir(), "gstack-status-bench-"));
  try {
    const layout = gstackLayout(join(base, "state"));
    await mkdir(layout.dispatch.incoming, { recursive: true });
    await mkdir(layout.dispatch.completed, { recursive: true });
    const repo = join(base, "repo");
    await mkdir(repo);
    git(repo, "init", "-q", "-b", "main");
    await Promise.all(
      Array.from({ length: files }, (_, index) =>
        writeFile(join(repo, `file-${index}.txt`), `file ${index}\n`),
      ),
    );
    git(repo, "add", "-A");
    git(repo, "commit", "-q", "-m", "files");
    const baseSha = git(repo, "rev-parse", "HEAD");
    // Half the branches hold one commit to land, half none.
    git(repo, "branch", "work", "main");
    git(repo, "worktree", "add", "-q", join(base, "work"), "work");
    await writeFile(join(base, "work", "done.txt"), "done\n");
    git(join(base, "work"), "add", "-A");
    git(join(base, "work"), "commit", "-q", "-m", "done");
    const measures: number[] = [];
    for (let index = 0; index < count; index += 1) {
      const id = `dispatch-bench-${String(index).padStart(4, "0")}`;
      const path = join(layout.root, "worktrees", "bench", id);
      git(repo, "worktree", "add", "-q", "-b", `gstack/${id}`, path, index % 2 === 0 ? "work" : "main");
      const tree: WorktreeRecord = {
        repo,
        path,
        cwd: path,
        branch: `gstack/${id}`,
        base: "main",
        base_sha: baseSha,
        land_into: "main",
        created_at: new Date().toISOString(),
      };
      const began = performance.now();
      const measure = await measureWorktree(tree);
      measures.push(performance.now() - began);
      const state: SessionState = {
        id,
        project: "bench",
        project_dir: repo,
        agent: "claude",
        status: "finished",
        claimed_file: join(layout.dispatch.incoming, `${id}.md`),
        first_seen: new Date().toISOString(),
        queued_at: new Date().toISOString(),
        attempt: 1,
        retries: 0,
        include_learnings: false,
        worktree: tree,
        ...(measure ? { worktree_measure: measure } : {}),
        updated_at: new Date(Date.now() - index * 1000).toISOString(),
      };
      await writeState(layout, state);
      // Each finished dispatch left its report, as a real one does; status shows the newest.
      await writeFile(
        layout.dispatch.completedJson(id),
        JSON.stringify({
          dispatch_id: id,
          status: "completed",
          duration: 60,
          project: "bench",
          commits: index % 2 === 0 ? 1 : 0,
          finished_at: state.updated_at,
        }),
      );
    }
    const sorted = [...measures].sort((a, b) => a - b);
    console.log(
      `status with ${count} worktrees awaiting landing (${files} files each); measuring one at its finish: median ${sorted[Math.floor(sorted.length / 2)]?.toFixed(1)} ms, once`,
    );
    benchStartUp(
      join(import.meta.dirname, "..", "dist", "cli.js"),
      [
        {
          label: "gstack-dispatch status (nothing waiting)",
          args: ["status", "--root", join(base, "empty")],
        },
        { label: `gstack-dispatch status (${count} waiting)`, args: ["status", "--root", layout.root] },
        {
          label: `gstack-dispatch status --json (${count} waiting)`,
          args: ["status", "--json", "--root", layout.root],
        },
      ],
      31,
    );
    if (process.env.BENCH_STATUS_KEEP) {
      console.log(`kept ${layout.root}`);
      return;
    }
  } finally {
    if (!process.env.BENCH_STATUS_KEEP) await rm(base, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchStatus();

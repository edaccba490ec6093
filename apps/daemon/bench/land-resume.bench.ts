/**
 * Finishing a landing a kill cut short, as ratios measured in the same run on a repository
 * whose landing changes BENCH_LAND_FILES files (default 1,000), against one bare
 * `git read-tree -m -u <before> <after>` of the same change (what the landing's own first
 * attempt runs). Three cuts, each made exactly as a kill leaves it (the landing's record written
 * and its index lock taken):
 *   right after the lock   no file written yet: finishing writes them all
 *   half-way               half the files at their new version, one of them empty (git had
 *                          made it and not yet written it), the rest as before
 *   before the index       every file written, the index and branch not yet moved
 * BENCH_LAND_ROUNDS (default 5) sets how many of each; rounds alternate with the baseline so
 * both see the same machine.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { gstackLayout } from "@gstack/contracts";
import { resumeCheckoutMove, takeCheckout } from "@gstack/daemon-client";

const files = Number(process.env.BENCH_LAND_FILES ?? 1000);
const rounds = Number(process.env.BENCH_LAND_ROUNDS ?? 5);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const format = (ms: number) => `${ms.toFixed(1)} ms`;

function git(repo: string, args: string[], env: Record<string, string> = {}, input?: string): string {
  return execFileSync("git", ["-C", repo, ...args], {
    encoding: "utf8",
    env: { ...process.env, ...env },
    ...(input === undefined ? {} : { input }),
  }).trim();
}

/** A repository on `main` at `before`, and `after`, which changes every one of its files. */
async function repository(
  base: string,
): Promise<{ repo: string; before: string; after: string; paths: string[] }> {
  const repo = join(base, "repo");
  await mkdir(repo);
  git(repo, ["init", "-q", "-b", "main"]);
  const paths: string[] = [];
  const write = async (version: string) => {
    for (let index = 0; index < files; index += 1) {
      const folder = `d${index % 25}`;
      await mkdir(join(repo, folder), { recursive: true });
      const path = `${folder}/file-${index}.txt`;
      if (version === "before") paths.push(path);
      await writeFile(join(repo, path), `${version} ${index}\n${"line\n".repeat(index % 40)}`);
    }
    git(repo, ["add", "-A"]);
    git(repo, ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", version]);
    return git(repo, ["rev-parse", "HEAD"]);
  };
  const before = await write("before");
  const after = await write("after");
  git(repo, ["reset", "-q", "--hard", before]);
  return { repo, before, after, paths };
}

export async function benchLandResume(): Promise<void> {
  const base = await mkdtemp(join(tmpdir(), "gstack-land-bench-"));
  const { repo, before, after, paths } = await repository(base);
  const layout = gstackLayout(join(base, "state"));
  const id = "dispatch-bench-land";
  await mkdir(layout.dispatch.sessionDir(id), { recursive: true });
  const scratch = join(base, "scratch.index");

  /** One bare `read-tree -m -u` of the change, on a copy of the index, then put back. */
  const bare = () => {
    copyFileSync(join(repo, ".git", "index"), scratch);
    const begin = performance.now();
    git(repo, ["read-tree", "-m", "-u", before, after], { GIT_INDEX_FILE: scratch });
    const took = performance.now() - begin;
    git(repo, ["reset", "-q", "--hard", before]);
    return took;
  };

  /** A cut landing made as a kill leaves it (`write` files already at their new version), finished. */
  const finish = async (written: string[], emptied?: string) => {
    await takeCheckout(layout, id, {
      holder: repo,
      branch: "main",
      from: before,
      to: after,
      how: "fast-forward",
    });
    if (written.length > 0) {
      git(repo, ["read-tree", after], { GIT_INDEX_FILE: scratch });
      git(
        repo,
        ["checkout-index", "-f", "-z", "--stdin"],
        { GIT_INDEX_FILE: scratch },
        `${written.join("\0")}\0`,
      );
    }
    if (emptied) await truncate(join(repo, emptied), 0);
    const begin = performance.now();
    const outcome = await resumeCheckoutMove(layout, id);
    const took = performance.now() - begin;
    if (outcome?.move.to !== after || git(repo, ["rev-parse", "main"]) !== after) {
      throw new Error("the cut landing was not finished");
    }
    if (git(repo, ["status", "--porcelain"]) !== "") throw new Error("the finished checkout is not clean");
    git(repo, ["reset", "-q", "--hard", before]);
    return took;
  };

  const half = paths.filter((_, index) => index % 2 === 0);
  const cuts = [
    { label: "right after the lock (no file written)", written: [] as string[] },
    {
      label: `half-way (${half.length} written, one of them empty)`,
      written: half,
      emptied: half[half.length - 1],
    },
    { label: "before the index (every file written)", written: paths },
  ];
  const baseline: number[] = [];
  const measured = cuts.map(() => [] as number[]);
  for (let round = 0; round < rounds; round += 1) {
    for (const [index, cut] of cuts.entries()) {
      baseline.push(bare());
      measured[index]?.push(await finish(cut.written, cut.emptied));
    }
  }
  await rm(base, { recursive: true, force: true });
  const bareMs = median(baseline);
  console.log(
    `finishing a landing cut short, ${files} files changed, median of ${rounds} (against one bare git read-tree -m -u of the same change, ${format(bareMs)}):`,
  );
  for (const [index, cut] of cuts.entries()) {
    const ms = median(measured[index] ?? []);
    console.log(`  cut ${cut.label}: ${format(ms)} = ${(ms / bareMs).toFixed(2)}× the bare read-tree`);
  }
}

/**
 * The completions follower with a folder that holds BENCH_COMPLETED (default 10,000) earlier
 * completions, all delivered, as ratios against the least work each step needs, in the same run:
 *   start       the scan at start, against listing the folder and the ledger
 *   new         CPU from a completion renamed into place to its delivery (its daemon record
 *               checked), against reading and parsing that one file (BENCH_NEW, default 50, one at a time, after 10 not counted)
 */
import { mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gstackLayout, parseJson } from "@gstack/contracts";
import { type CompletionInbox, followCompletedFolder } from "../src/completion-follower";
import { deliveredLedger } from "../src/delivered-ledger";
import type { PluginSettings } from "../src/plugin-settings";

const earlier = Number(process.env.BENCH_COMPLETED ?? 10_000);
const fresh = Number(process.env.BENCH_NEW ?? 50);

const base = await mkdtemp(join(tmpdir(), "gstack-follower-bench-"));
const layout = gstackLayout(join(base, "gstack"));
const folder = layout.dispatch.completed;
await mkdir(folder, { recursive: true });
const ledger = deliveredLedger(join(base, "state"));
const text = (id: string) =>
  JSON.stringify({ dispatch_id: id, status: "completed", duration: 12, commits: 2, summary: "Shipped it." });
for (let index = 0; index < earlier; index += 1) {
  const id = `dispatch-earlier-${index}`;
  await writeFile(join(folder, `${id}.json`), text(id));
  await writeFile(join(folder, `${id}.md`), `# ${id}\n`);
  await ledger.record({
    dispatch_id: id,
    session_key: "s",
    via: "completed-folder",
    delivered_at: "2026-01-01T00:00:00Z",
  });
}

let arrived: ((id: string) => void) | undefined;
const inbox: CompletionInbox = {
  async deliver({ completion }) {
    arrived?.(completion.dispatch_id);
    return "delivered";
  },
};
const cpuMs = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
};

const listStart = performance.now();
await readdir(folder);
await ledger.list();
const listMs = performance.now() - listStart;
const startBegin = performance.now();
const follower = followCompletedFolder({ layout } as PluginSettings, inbox, ledger, { warn: console.warn });
await follower.ready;
const startMs = performance.now() - startBegin;
console.log(
  `follower with ${earlier} earlier completions: start ${startMs.toFixed(1)} ms = ${(startMs / listMs).toFixed(1)}× listing the folder and the ledger (${listMs.toFixed(1)} ms)`,
);

const warmUp = 10;
let followCpu = 0;
let baselineCpu = 0;
for (let index = -warmUp; index < fresh; index += 1) {
  const id = `dispatch-new-${index + warmUp}`;
  const hidden = join(folder, `.${id}.json.tmp`);
  await writeFile(hidden, text(id));
  // The daemon's record of the dispatch, which the follower checks before delivering.
  await mkdir(layout.dispatch.sessionDir(id), { recursive: true });
  await writeFile(join(layout.dispatch.sessionDir(id), "state.json"), JSON.stringify({ id }));
  const delivered = new Promise<void>((resolve) => {
    arrived = (got) => got === id && resolve();
  });
  const cpu = process.cpuUsage();
  await rename(hidden, join(folder, `${id}.json`));
  await delivered;
  const used = cpuMs(cpu);
  const baseline = process.cpuUsage();
  parseJson("completion", await readFile(join(folder, `${id}.json`), "utf8"), { source: id });
  if (index < 0) continue;
  followCpu += used;
  baselineCpu += cpuMs(baseline);
}
console.log(
  `  a new completion: ${(followCpu / fresh).toFixed(2)} ms of CPU to delivery = ${(followCpu / baselineCpu).toFixed(1)}× reading and parsing it (${(baselineCpu / fresh).toFixed(2)} ms)`,
);
await follower.close();
await rm(base, { recursive: true, force: true });

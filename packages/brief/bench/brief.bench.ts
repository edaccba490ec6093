/**
 * The brief from a large history, against reading that history's files in the same run:
 * 1,000,000 activity entries over two years of weekly files (40 projects) and 10,000 learnings
 * of the project briefed. Prints the brief's time (median of several runs), the time to read the
 * files it could read (every weekly file and the learnings file, as text), and their ratio;
 * the goal is a brief within 200 ms. Also the worst case: a project last worked on two years ago,
 * first with no week index (every week scanned, which builds the index), then with it.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { listWeeks } from "@gstack/activity";
import { gstackLayout, isoWeekOf } from "@gstack/contracts";
import { formatBrief, gatherBrief } from "../src/index";

const ENTRIES = 1_000_000;
const LEARNINGS = 10_000;
const PROJECTS = 40;
const WEEKS = 104;

const root = await mkdtemp(join(tmpdir(), "brief-bench-"));
const layout = gstackLayout(root);
const now = new Date("2026-11-27T09:00:00Z");
const span = WEEKS * 7 * 86_400_000;
const start = now.getTime() - span;

console.log(
  `brief: writing ${ENTRIES.toLocaleString("en")} activity entries and ${LEARNINGS.toLocaleString("en")} learnings…`,
);
await mkdir(layout.activity.dir, { recursive: true });
const byWeek = new Map<string, string[]>();
for (let index = 0; index < ENTRIES; index++) {
  const time = start + Math.floor((index / ENTRIES) * (span - 3_600_000));
  // The old project was worked on only in the first days of the two years.
  const project = index < 50 ? "acme-old" : `acme-p${index % PROJECTS}`;
  const ts = new Date(time).toISOString();
  const line = JSON.stringify({
    ts,
    project: index % PROJECTS === 7 && index >= 50 ? "acme-baku" : project,
    skill: ["ship", "review", "qa", "investigate"][index % 4],
    duration: 300 + (index % 3600),
    source: index % 2 === 0 ? "timeline" : "daemon",
    artifacts: [`commit:${(index * 2654435761).toString(16).slice(0, 7).padStart(7, "0")}`],
    outcome: "success",
    cost_usd: (index % 500) / 100,
  });
  const week = isoWeekOf(new Date(time));
  const lines = byWeek.get(week) ?? [];
  if (lines.length === 0) byWeek.set(week, lines);
  lines.push(line);
}
for (const [week, lines] of byWeek) await writeFile(layout.activity.week(week), `${lines.join("\n")}\n`);
byWeek.clear();
const project = layout.project("acme-baku");
await mkdir(project.checkpoints, { recursive: true });
const learningLines: string[] = [];
for (let index = 0; index < LEARNINGS; index++) {
  learningLines.push(
    JSON.stringify({
      skill: "investigate",
      type: ["pattern", "pitfall", "preference", "architecture"][index % 4],
      key: `key-${index % 6000}`,
      insight: `Learning number ${index}: the ${index % 50}th module keeps its state in a cache that must be warmed first.`,
      confidence: 1 + (index % 10),
      source: index % 3 === 0 ? "user-stated" : "observed",
      ts: new Date(now.getTime() - (index % 400) * 86_400_000).toISOString(),
    }),
  );
}
await writeFile(project.learnings, `${learningLines.join("\n")}\n`);
await writeFile(
  join(project.checkpoints, "20261126-173000-auth.md"),
  "---\nbranch: fix/auth\ntimestamp: 2026-11-26T17:30:00Z\n---\n## Working on: Debugging auth\n\n### Remaining Work\n- Retry once on a 401\n",
);
await writeFile(layout.routing, "routes:\n  - match: { project: acme-baku }\n    skills: [investigate]\n");

async function median(runs: number, body: () => Promise<unknown>): Promise<number> {
  await body();
  const times: number[] = [];
  for (let index = 0; index < runs; index++) {
    const began = performance.now();
    await body();
    times.push(performance.now() - began);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
}

const weeks = await listWeeks(layout);
const readAll = await median(3, async () => {
  let bytes = 0;
  for (const week of weeks) bytes += (await readFile(layout.activity.week(week), "utf8")).length;
  bytes += (await readFile(project.learnings, "utf8")).length;
  return bytes;
});
const options = { root, now, openWork: async () => [], settings: { defaultBudgetUsd: 5 } };
let sample = "";
const brief = await median(7, async () => {
  const made = await gatherBrief({ project: "baku" }, options);
  sample = formatBrief(made, { now });
});
await rm(join(layout.activity.dir, ".brief-week-projects.json"), { force: true });
const coldStart = performance.now();
await gatherBrief({ project: "acme-old" }, options);
const cold = performance.now() - coldStart;
const worst = await median(3, () => gatherBrief({ project: "acme-old" }, options));

console.log(`  ${weeks.length} weekly files, ${LEARNINGS.toLocaleString("en")} learnings`);
console.log(`  reading those files (text only): ${readAll.toFixed(0)} ms`);
console.log(
  `  brief for baku: ${brief.toFixed(1)} ms (goal ≤ 200 ms: ${brief <= 200 ? "met" : "NOT met"}), ${(brief / readAll).toFixed(3)}× reading the files`,
);
console.log(
  `  brief for a project last worked on two years ago, no week index yet (every week scanned): ${cold.toFixed(0)} ms, ${(cold / readAll).toFixed(2)}× reading the files`,
);
console.log(
  `  the same with the week index: ${worst.toFixed(0)} ms, ${(worst / readAll).toFixed(3)}× reading the files`,
);
console.log(
  sample
    .split("\n")
    .slice(0, 3)
    .map((line) => `  | ${line.slice(0, 110)}`)
    .join("\n"),
);
await rm(root, { recursive: true, force: true });

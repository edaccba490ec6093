/**
 * `pnpm bench`: how much the contracts cost over the raw operations they wrap, as ratios
 * measured in this process (higher than 1× means slower than the baseline).
 */
import { createHmac } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchStartUp } from "../../../scripts/bench-start-up";
import { gstackLayout, isoWeekOf } from "../src/layout";
import { parseJson, parseJsonLines } from "../src/parse";
import { canonicalJson, signDocument } from "../src/signature";

function measure(run: () => void, minimumMilliseconds: number): number {
  let iterations = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < minimumMilliseconds) {
    for (let index = 0; index < 20; index++) run();
    iterations += 20;
    elapsed = performance.now() - start;
  }
  return elapsed / iterations;
}

const median = (values: number[]): number =>
  [...values].sort((first, second) => first - second)[Math.floor(values.length / 2)]!;

/**
 * The subject's time as a ratio to the baseline's: both warmed up, then timed in alternating
 * rounds, and the median of the rounds' ratios reported, so a busy moment of a shared machine
 * weighs on one round of both sides rather than on one side.
 */
function compare(name: string, subject: () => void, baseline: () => void, baselineName: string, rounds = 15) {
  measure(baseline, 100);
  measure(subject, 100);
  const ratios: number[] = [];
  const subjectTimes: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const baselineTime = measure(baseline, 40);
    const subjectTime = measure(subject, 40);
    ratios.push(subjectTime / baselineTime);
    subjectTimes.push(subjectTime);
  }
  console.log(
    `${name.padEnd(34)} ${median(ratios).toFixed(2)}× ${baselineName}  (${(median(subjectTimes) * 1000).toFixed(1)} µs per run)`,
  );
}

const dispatch = {
  id: "dispatch-2026-04-03-auth-flow",
  dispatched_by: "wintermute",
  task: "Build JWT auth flow with refresh token rotation. ".repeat(20),
  project: "baku",
  project_dir: "~/git/baku",
  learnings: Array.from({ length: 10 }, (_, index) => `learning number ${index} about the code base`),
  constraints: ["mobile client needs offline token refresh"],
  callback_url: "https://your-clawvisor.ngrok.app/api/tasks/task_abc123/complete",
  clawvisor_task_id: "task_abc123",
  ttl_seconds: 3600,
  created_at: "2026-04-03T14:30:00Z",
};
const dispatchText = JSON.stringify(dispatch);
const secret = "bench-secret-of-enough-length";

const learningsText = Array.from({ length: 1000 }, (_, index) =>
  JSON.stringify({
    skill: "investigate",
    type: "pitfall",
    key: `key-${index}`,
    insight: "Baku uses Drizzle ORM, not Prisma",
    confidence: 1 + (index % 10),
    source: "observed",
    ts: "2026-04-03T14:30:00Z",
    trusted: false,
  }),
).join("\n");

console.log("@gstack/contracts bench (ratios against a baseline run in this process)");
compare(
  "parseJson dispatch",
  () => parseJson("dispatch", dispatchText),
  () => JSON.parse(dispatchText),
  "raw JSON.parse",
);
compare(
  "parseJsonLines 1000 learnings",
  () => parseJsonLines("learning", learningsText),
  () => {
    for (const line of learningsText.split("\n")) JSON.parse(line);
  },
  "JSON.parse per line",
);
compare(
  "canonicalJson dispatch",
  () => canonicalJson(dispatch),
  () => JSON.stringify(dispatch),
  "JSON.stringify",
);
compare(
  "signDocument dispatch",
  () => signDocument(dispatch, secret),
  () => createHmac("sha256", secret).update(JSON.stringify(dispatch)).digest("hex"),
  "HMAC over JSON.stringify",
);

// Start-up: what importing the package costs a command, and the read commands of the packages
// built on it (skipped when they are not built). Each is a ratio to `node -e 0` in this run.
const packagesDir = join(import.meta.dirname, "..", "..");
const root = mkdtempSync(join(tmpdir(), "contracts-bench-"));
try {
  const layout = gstackLayout(root);
  mkdirSync(layout.activity.dir, { recursive: true });
  const now = new Date();
  writeFileSync(
    layout.activity.week(isoWeekOf(now)),
    `${Array.from({ length: 50 }, (_, index) =>
      JSON.stringify({
        ts: new Date(now.getTime() - index * 60_000).toISOString(),
        project: "baku",
        skill: index % 2 ? "ship" : "review",
        artifacts: [`pr:${index}`],
        duration: 60 + index,
        source: "daemon",
      }),
    ).join("\n")}\n`,
  );
  writeFileSync(
    join(root, "routing.yaml"),
    'routes:\n  - name: security\n    match: { task_type: "security" }\n    skills: ["gstack-cso"]\n',
  );
  console.log();
  benchStartUp(join(import.meta.dirname, "..", "dist", "index.js"), [
    { label: "import @gstack/contracts", args: [] },
  ]);
  const commands: [string, string[]][] = [
    ["activity", ["week", "--root", root]],
    ["handoff", ["list", "--root", root]],
    ["routing", ["check", "--root", root]],
  ];
  for (const [name, args] of commands) {
    const cli = join(packagesDir, name, "dist", "cli.js");
    if (!existsSync(cli)) {
      console.log(`  gstack-${name}: not built, skipped`);
      continue;
    }
    benchStartUp(cli, [{ label: `gstack-${name} ${args[0]}`, args }]);
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}

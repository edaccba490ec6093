#!/usr/bin/env node
// Reads the vitest JSON reports one `./dev test` run leaves in a folder (one file per package)
// and prints where the time went: each package's wall time, the slowest test files and the
// slowest tests, and the test files that took the most CPU (from the cpu.jsonl the shared setup
// writes beside the reports). With --failures it prints every failed test with its first error lines instead.
//   node scripts/test-timings.mjs DIR [--top N] [--failures]
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";

const args = process.argv.slice(2);
const dir = args.find((arg) => !arg.startsWith("--"));
const topIndex = args.indexOf("--top");
const top = topIndex >= 0 ? Number(args[topIndex + 1]) : 10;
if (!dir) {
  console.error("usage: node scripts/test-timings.mjs DIR [--top N] [--failures]");
  process.exit(2);
}
const root = process.cwd();
let names = [];
try {
  names = readdirSync(dir).filter((name) => name.endsWith(".json"));
} catch {
  names = [];
}
if (names.length === 0) {
  console.log(`no test reports in ${dir} (every package's tests came from turbo's cache)`);
  process.exit(0);
}

const packages = [];
const files = [];
const tests = [];
const failures = [];
for (const name of names.sort()) {
  let report;
  try {
    report = JSON.parse(readFileSync(join(dir, name), "utf8"));
  } catch (error) {
    console.log(`${name}: unreadable report (${error.message})`);
    continue;
  }
  const pkg = name.replace(/\.json$/, "").replace(/^(.+?)__/, "@$1/");
  let end = report.startTime;
  for (const file of report.testResults ?? []) {
    end = Math.max(end, file.endTime ?? 0);
    const path = relative(root, file.name);
    files.push({ pkg, path, ms: (file.endTime ?? 0) - (file.startTime ?? 0) });
    for (const test of file.assertionResults ?? []) {
      tests.push({ pkg, path, name: test.fullName ?? test.title, ms: test.duration ?? 0 });
      if (test.status === "failed")
        failures.push({ path, name: test.fullName ?? test.title, messages: test.failureMessages ?? [] });
    }
    if (file.status === "failed" && (file.assertionResults ?? []).every((test) => test.status !== "failed")) {
      failures.push({ path, name: "(the file itself)", messages: [file.message ?? ""] });
    }
  }
  packages.push({
    pkg,
    ms: end - report.startTime,
    tests: report.numTotalTests,
    failed: report.numFailedTests,
  });
}

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`.padStart(8);
if (args.includes("--failures")) {
  for (const failure of failures) {
    console.log(`FAIL ${failure.path} > ${failure.name}`);
    for (const message of failure.messages) {
      for (const line of message.split("\n").slice(0, 12)) console.log(`    ${line}`);
    }
  }
  if (failures.length === 0) console.log("no failed test in the reports (see the log for what failed)");
  process.exit(0);
}
console.log("packages, slowest first (wall time of their vitest run):");
for (const p of packages.sort((a, b) => b.ms - a.ms))
  console.log(`${seconds(p.ms)}  ${p.pkg} (${p.tests} tests${p.failed ? `, ${p.failed} failed` : ""})`);
console.log(`slowest ${top} test files:`);
for (const f of files.sort((a, b) => b.ms - a.ms).slice(0, top)) console.log(`${seconds(f.ms)}  ${f.path}`);
console.log(`slowest ${top} tests:`);
for (const t of tests.sort((a, b) => b.ms - a.ms).slice(0, top))
  console.log(`${seconds(t.ms)}  ${t.path} > ${t.name}`);

// CPU by test file: the file's own process and the children it collected.
let cpu = [];
try {
  cpu = readFileSync(join(dir, "cpu.jsonl"), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line))
    .map((entry) => ({ path: relative(root, entry.file ?? "?"), own: entry.own, children: entry.children }));
} catch {
  cpu = [];
}
if (cpu.length > 0) {
  const total = cpu.reduce((sum, entry) => sum + entry.own + entry.children, 0);
  console.log(
    `most CPU, ${top} test files (own + child processes; ${total.toFixed(0)} s in all ${cpu.length} files):`,
  );
  for (const entry of cpu.sort((a, b) => b.own + b.children - (a.own + a.children)).slice(0, top))
    console.log(
      `${seconds((entry.own + entry.children) * 1000)}  ${entry.path} (own ${entry.own.toFixed(1)} s)`,
    );
}

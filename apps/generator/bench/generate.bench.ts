/**
 * Generating gstack's skills, measured against reading the same files. The corpus is the
 * real gstack (`GSTACK_CORPUS`, or shared/corpus beside the checkout); without it, one is
 * synthesised from the fixture skills (60 skills, each fixture copied under new names).
 * Run with `pnpm bench`; figures are ratios against the baseline in the same process.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fixtureSources } from "../src/__fixtures__/fixtures";
import { buildFromFolder, generateToFolder } from "../src/generate";
import { clearParseCache, parseMarkdownStructure, parseWhole } from "../src/markdown-structure";
import { findRealCorpus } from "../src/real-corpus.test-support";

const CORPUS_SIZE = 60;
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 5);

async function synthesiseCorpus(folder: string): Promise<void> {
  const members = fixtureSources().filter(
    (source) => source.gstackName !== "" && source.gstackName !== "gstack-upgrade",
  );
  const root = fixtureSources().find((source) => source.gstackName === "");
  if (root) await writeFile(join(folder, "SKILL.md"), root.source);
  for (let index = 0; index < CORPUS_SIZE - 1; index++) {
    const template = members[index % members.length]!;
    const name = `${template.gstackName}-${index}`;
    await mkdir(join(folder, name), { recursive: true });
    await writeFile(
      join(folder, name, "SKILL.md"),
      template.source.replace(`name: ${template.gstackName}\n`, `name: ${name}\n`),
    );
  }
}

/** The SKILL.md files of a gstack folder: the root one and one per skill folder. */
async function skillFiles(folder: string): Promise<string[]> {
  const files = [join(folder, "SKILL.md")];
  for (const entry of (await readdir(folder, { withFileTypes: true })).sort((a, b) =>
    a.name < b.name ? -1 : 1,
  )) {
    if (entry.isDirectory()) files.push(join(folder, entry.name, "SKILL.md"));
  }
  const present: string[] = [];
  for (const file of files) {
    if (
      await readFile(file).then(
        () => true,
        () => false,
      )
    )
      present.push(file);
  }
  return present;
}

async function readCorpus(files: readonly string[]): Promise<number> {
  let bytes = 0;
  for (const file of files) bytes += (await readFile(file)).length;
  return bytes;
}

async function readAndParseCorpus(files: readonly string[]): Promise<number> {
  let blocks = 0;
  for (const file of files) blocks += parseWhole(await readFile(file, "utf8")).blocks.length;
  return blocks;
}

async function readAndScanCorpus(files: readonly string[]): Promise<number> {
  let blocks = 0;
  for (const file of files) blocks += parseMarkdownStructure(await readFile(file, "utf8")).blocks.length;
  return blocks;
}

/**
 * Median time of `task`, each round from a cold parse cache, as a single CLI run has; the
 * processor time beside it (all of the process's threads), which other load on the machine
 * moves less than the time on the clock.
 */
async function median(task: () => Promise<unknown>): Promise<number> {
  clearParseCache();
  await task();
  const times: number[] = [];
  const processor: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    clearParseCache();
    const cpu = process.cpuUsage();
    const start = process.hrtime.bigint();
    await task();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
    const used = process.cpuUsage(cpu);
    processor.push((used.user + used.system) / 1000);
  }
  times.sort((left, right) => left - right);
  processor.sort((left, right) => left - right);
  lastProcessor = processor[Math.floor(processor.length / 2)]!;
  return times[Math.floor(times.length / 2)]!;
}
let lastProcessor = 0;
const processorTimes = new Map<string, number>();

const workspace = await mkdtemp(join(tmpdir(), "gstack-generator-bench-"));
try {
  const real = findRealCorpus();
  const input = real ?? join(workspace, "gstack");
  if (!real) {
    await mkdir(input);
    await synthesiseCorpus(input);
  }
  const files = await skillFiles(input);
  const bytes = await readCorpus(files);

  const measured = async (label: string, task: () => Promise<unknown>): Promise<number> => {
    const time = await median(task);
    processorTimes.set(label, lastProcessor);
    return time;
  };
  const read = await measured("read", () => readCorpus(files));
  const parsed = await measured("parse", () => readAndParseCorpus(files));
  const scanned = await measured("scan", () => readAndScanCorpus(files));
  const inMemory = await measured("memory", () =>
    buildFromFolder({ input, output: join(workspace, "unused") }),
  );
  const output = join(workspace, "openclaw");
  await generateToFolder({ input, output });
  const rerun = await measured("rerun", () => generateToFolder({ input, output }));
  let fresh = 0;
  const fullWrite = await measured("write", async () => {
    fresh++;
    await generateToFolder({ input, output: join(workspace, `fresh-${fresh}`) });
  });

  const row = (label: string, key: string, milliseconds: number, note = "") =>
    console.log(
      `${label.padEnd(52)} ${milliseconds.toFixed(2).padStart(9)} ms (processor ${processorTimes.get(key)?.toFixed(0).padStart(5)} ms)  ${(milliseconds / read).toFixed(1).padStart(6)}× reading${note}`,
    );
  console.log(
    `corpus: ${real ?? "synthesised from the fixtures"}: ${files.length} skills, ${(bytes / 1024).toFixed(0)} KiB; median of ${ROUNDS} rounds`,
  );
  row(`baseline: read the ${files.length} SKILL.md files`, "read", read);
  row("reference: read and parse each once (CommonMark)", "parse", parsed);
  row("reference: read and scan each once (the scanner)", "scan", scanned);
  row(
    "generate in memory (read, transform, validate)",
    "memory",
    inMemory,
    `  = ${(inMemory / parsed).toFixed(2)}× one parse, ${(inMemory / scanned).toFixed(1)}× one scan`,
  );
  row("generate into an up-to-date folder (no writes)", "rerun", rerun);
  row("generate into an empty folder (atomic writes)", "write", fullWrite);
  console.log(`per skill: ${(inMemory / files.length).toFixed(2)} ms to generate in memory`);
} finally {
  await rm(workspace, { recursive: true, force: true });
}

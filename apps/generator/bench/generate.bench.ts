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
import { clearParseCache, parseWhole } from "../src/markdown-structure";
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

/** Median time of `task`, each round from a cold parse cache, as a single CLI run has. */
async function median(task: () => Promise<unknown>): Promise<number> {
  clearParseCache();
  await task();
  const times: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    clearParseCache();
    const start = process.hrtime.bigint();
    await task();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((left, right) => left - right);
  return times[Math.floor(times.length / 2)]!;
}

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

  const read = await median(() => readCorpus(files));
  const parsed = await median(() => readAndParseCorpus(files));
  const inMemory = await median(() => buildFromFolder({ input, output: join(workspace, "unused") }));
  const output = join(workspace, "openclaw");
  await generateToFolder({ input, output });
  const rerun = await median(() => generateToFolder({ input, output }));
  let fresh = 0;
  const fullWrite = await median(async () => {
    fresh++;
    await generateToFolder({ input, output: join(workspace, `fresh-${fresh}`) });
  });

  const row = (label: string, milliseconds: number, note = "") =>
    console.log(
      `${label.padEnd(52)} ${milliseconds.toFixed(2).padStart(9)} ms  ${(milliseconds / read).toFixed(1).padStart(6)}× reading${note}`,
    );
  console.log(
    `corpus: ${real ?? "synthesised from the fixtures"}: ${files.length} skills, ${(bytes / 1024).toFixed(0)} KiB; median of ${ROUNDS} rounds`,
  );
  row(`baseline: read the ${files.length} SKILL.md files`, read);
  row("reference: read and parse each as Markdown once", parsed);
  row(
    "generate in memory (read, transform, validate)",
    inMemory,
    `  = ${(inMemory / parsed).toFixed(1)}× one parse`,
  );
  row("generate into an up-to-date folder (no writes)", rerun);
  row("generate into an empty folder (atomic writes)", fullWrite);
  console.log(`per skill: ${(inMemory / files.length).toFixed(2)} ms to generate in memory`);
} finally {
  await rm(workspace, { recursive: true, force: true });
}

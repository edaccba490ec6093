/**
 * Generating a 60-skill gstack corpus, measured against reading the same files.
 * The corpus is synthesised from the fixture skills: each one copied under new names.
 * Run with `pnpm bench`; figures are ratios against the baseline in the same process.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fixtureSources } from "../src/__fixtures__/fixtures";
import { buildFromFolder, generateToFolder } from "../src/generate";
import { parseMarkdownStructure } from "../src/markdown-structure";

const CORPUS_SIZE = 60;
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 7);

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

async function readCorpus(folder: string): Promise<number> {
  let bytes = (await readFile(join(folder, "SKILL.md"))).length;
  for (const name of (await readdir(folder)).sort()) {
    if (name === "SKILL.md") continue;
    bytes += (await readFile(join(folder, name, "SKILL.md"))).length;
  }
  return bytes;
}

async function readAndParseCorpus(folder: string): Promise<number> {
  let blocks = parseMarkdownStructure(await readFile(join(folder, "SKILL.md"), "utf8")).blocks.length;
  for (const name of (await readdir(folder)).sort()) {
    if (name === "SKILL.md") continue;
    blocks += parseMarkdownStructure(await readFile(join(folder, name, "SKILL.md"), "utf8")).blocks.length;
  }
  return blocks;
}

async function median(task: () => Promise<unknown>): Promise<number> {
  await task();
  const times: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const start = process.hrtime.bigint();
    await task();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((left, right) => left - right);
  return times[Math.floor(times.length / 2)]!;
}

const workspace = await mkdtemp(join(tmpdir(), "gstack-generator-bench-"));
try {
  const input = join(workspace, "gstack");
  await mkdir(input);
  await synthesiseCorpus(input);
  const bytes = await readCorpus(input);

  const read = await median(() => readCorpus(input));
  const parsed = await median(() => readAndParseCorpus(input));
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
  console.log(`corpus: ${CORPUS_SIZE} skills, ${(bytes / 1024).toFixed(0)} KiB; median of ${ROUNDS} rounds`);
  row(`baseline: read the ${CORPUS_SIZE} SKILL.md files`, read);
  row("reference: read and parse each as Markdown once", parsed);
  row(
    "generate in memory (read, transform, validate)",
    inMemory,
    `  = ${(inMemory / parsed).toFixed(1)}× one parse`,
  );
  row("generate into an up-to-date folder (no writes)", rerun);
  row("generate into an empty folder (atomic writes)", fullWrite);
  console.log(`per skill: ${(inMemory / CORPUS_SIZE).toFixed(2)} ms to generate in memory`);
} finally {
  await rm(workspace, { recursive: true, force: true });
}

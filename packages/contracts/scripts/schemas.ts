/**
 * Writes `schemas/*.schema.json` at the repository root from the zod schemas, or with
 * `--check` fails when a committed file differs from what the schemas produce.
 */
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { allJsonSchemas } from "../src/json-schema";

const outDir = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "schemas");
const check = process.argv.includes("--check");

const expected = new Map(
  Object.entries(allJsonSchemas()).map(([kind, schema]) => [
    `${kind}.schema.json`,
    `${JSON.stringify(schema, null, 2)}\n`,
  ]),
);

await mkdir(outDir, { recursive: true });
const present = (await readdir(outDir)).filter((name) => name.endsWith(".schema.json"));
const problems: string[] = [];
for (const [name, text] of expected) {
  const path = join(outDir, name);
  const current = await readFile(path, "utf8").catch(() => undefined);
  if (current === text) continue;
  if (check) problems.push(current === undefined ? `schemas/${name} is missing` : `schemas/${name} is stale`);
  else await writeFile(path, text);
}
for (const name of present) {
  if (!expected.has(name)) problems.push(`schemas/${name} has no zod schema behind it`);
}
if (problems.length > 0 && check) {
  console.error(`${problems.join("\n")}\nRun 'pnpm schemas' and commit the result.`);
  process.exit(1);
}
if (!check) console.log(`wrote ${expected.size} schemas to schemas/`);
else console.log(`schemas/ is up to date (${expected.size} schemas)`);

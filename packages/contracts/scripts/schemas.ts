/**
 * Writes `schemas/*.schema.json` at the repository root from the zod schemas.
 *
 *   tsx scripts/schemas.ts              write the root schemas/
 *   tsx scripts/schemas.ts --check      fail when a committed file is missing, stale or orphaned
 *   tsx scripts/schemas.ts --out DIR    write a fresh copy into DIR (the build ships dist/schemas)
 */
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { schemaFiles } from "../src/json-schema";

const rootSchemas = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "schemas");
const args = process.argv.slice(2);
const check = args.includes("--check");
const outIndex = args.indexOf("--out");
const out = outIndex >= 0 ? args[outIndex + 1] : undefined;
if (outIndex >= 0 && !out) {
  console.error("schemas: --out needs a folder");
  process.exit(2);
}

const expected = schemaFiles();

if (out) {
  const folder = resolve(out);
  await rm(folder, { recursive: true, force: true });
  await mkdir(folder, { recursive: true });
  for (const [name, text] of expected) await writeFile(join(folder, name), text);
  console.log(`wrote ${expected.size} schemas to ${out}`);
} else {
  await mkdir(rootSchemas, { recursive: true });
  const present = (await readdir(rootSchemas)).filter((name) => name.endsWith(".schema.json"));
  const problems: string[] = [];
  for (const [name, text] of expected) {
    const path = join(rootSchemas, name);
    const current = await readFile(path, "utf8").catch(() => undefined);
    if (current === text) continue;
    if (check)
      problems.push(current === undefined ? `schemas/${name} is missing` : `schemas/${name} is stale`);
    else await writeFile(path, text);
  }
  for (const name of present) {
    if (expected.has(name)) continue;
    if (check) problems.push(`schemas/${name} has no zod schema behind it`);
    else await rm(join(rootSchemas, name));
  }
  if (problems.length > 0) {
    console.error(`${problems.join("\n")}\nRun 'pnpm schemas' and commit the result.`);
    process.exit(1);
  }
  console.log(
    check
      ? `schemas/ is up to date (${expected.size} schemas)`
      : `wrote ${expected.size} schemas to schemas/`,
  );
}

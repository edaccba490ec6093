import { resolve } from "node:path";
import { type Bundle, type BundleOptions, generateBundle } from "./generate-bundle";
import { compareOutput, type OutputDifference, writeOutput } from "./output-files";
import { type ReadSourcesOptions, readGstackVersion, readSkillSources } from "./read-skill-sources";
import { readSupportFiles } from "./support-files";

/** A generation run from a gstack folder to an output folder. */
export interface GenerateOptions extends BundleOptions, ReadSourcesOptions {
  /** The gstack folder: `~/.claude/skills/gstack` or a gstack checkout. */
  input: string;
  /** Where `skills/`, SOUL.md, AGENTS.md and clawhub.json go, e.g. `openclaw`. */
  output: string;
}

/**
 * Reads the gstack folder and generates the bundle in memory. The gstack version comes
 * from the option, else from the folder's VERSION file.
 */
export async function buildFromFolder(options: GenerateOptions): Promise<Bundle> {
  const input = resolve(options.input);
  const sources = await readSkillSources(input, options);
  const gstackVersion = options.gstackVersion ?? (await readGstackVersion(input));
  const support = await readSupportFiles(input, sources);
  return generateBundle(sources, { ...options, support, ...(gstackVersion ? { gstackVersion } : {}) });
}

/** Generates and writes the output; only changed files are touched. */
export async function generateToFolder(
  options: GenerateOptions,
): Promise<Bundle & { written: string[]; removed: string[] }> {
  const bundle = await buildFromFolder(options);
  const { written, removed } = await writeOutput(resolve(options.output), bundle.files, bundle.supportFiles);
  return { ...bundle, written, removed };
}

/** Generates in memory and compares with the output folder, writing nothing. */
export async function checkFolder(
  options: GenerateOptions,
): Promise<Bundle & { difference: OutputDifference }> {
  const bundle = await buildFromFolder(options);
  return {
    ...bundle,
    difference: await compareOutput(resolve(options.output), bundle.files, bundle.supportFiles),
  };
}

/**
 * The compatibility check behind `pnpm compat`: finds the schemas of the last release,
 * classifies every change against the current `schemas/`, and decides whether the change
 * set needs a major changeset. Side effects (git, the registry, the file system) are in
 * the small readers here; the decision itself is {@link decide}.
 */
import { execFile } from "node:child_process";
import { mkdir, readdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { gunzipSync } from "node:zlib";
import { parse as parseYaml } from "yaml";
import { compareSchemaSets, type JsonSchema, type SchemaChange } from "../src/schema-compatibility";

const run = promisify(execFile);

export const PACKAGE_NAME = "@gstack/contracts";
const SCHEMA_SUFFIX = ".schema.json";

/** The schemas of the last release and where they came from. */
export interface Baseline {
  /** e.g. `git tag @gstack/contracts@0.1.0` or `npm @gstack/contracts@0.1.0`. */
  label: string;
  schemas: Record<string, JsonSchema>;
}

/** What `pnpm compat` found and decided. */
export interface CompatResult {
  baseline: Baseline | undefined;
  /** Why no baseline was found, when none was. */
  noBaselineReason?: string;
  changes: SchemaChange[];
  breaking: SchemaChange[];
  majorChangesets: string[];
  ok: boolean;
}

function kindOf(fileName: string): string {
  return fileName.slice(0, -SCHEMA_SUFFIX.length);
}

/** Reads every `*.schema.json` in a folder, keyed by document kind. */
export async function readSchemaFolder(folder: string): Promise<Record<string, JsonSchema>> {
  const schemas: Record<string, JsonSchema> = {};
  for (const name of (await readdir(folder)).sort()) {
    if (!name.endsWith(SCHEMA_SUFFIX)) continue;
    schemas[kindOf(name)] = JSON.parse(await readFile(join(folder, name), "utf8")) as JsonSchema;
  }
  return schemas;
}

/** The newest `@gstack/contracts@*` tag in the repository, by version order. */
export async function newestReleaseTag(
  root: string,
  packageName = PACKAGE_NAME,
): Promise<string | undefined> {
  const { stdout } = await run("git", ["tag", "--list", `${packageName}@*`, "--sort=-v:refname"], {
    cwd: root,
  });
  return stdout.split("\n").find((line) => line.trim().length > 0);
}

/** The schemas committed under `schemasPath` at a git revision. */
export async function schemasAtRevision(
  root: string,
  revision: string,
  schemasPath = "schemas",
): Promise<Record<string, JsonSchema>> {
  const { stdout } = await run("git", ["ls-tree", "--name-only", revision, `${schemasPath}/`], { cwd: root });
  const schemas: Record<string, JsonSchema> = {};
  for (const path of stdout.split("\n").filter((line) => line.endsWith(SCHEMA_SUFFIX))) {
    const { stdout: text } = await run("git", ["show", `${revision}:${path}`], {
      cwd: root,
      maxBuffer: 16 * 1024 * 1024,
    });
    schemas[kindOf(path.split("/").pop()!)] = JSON.parse(text) as JsonSchema;
  }
  return schemas;
}

/** Reads the files of a gzipped tar archive (the format of an npm package). */
export function readTarball(gzipped: Uint8Array): Map<string, Buffer> {
  const archive = gunzipSync(gzipped);
  const files = new Map<string, Buffer>();
  let offset = 0;
  let longName: string | undefined;
  while (offset + 512 <= archive.length) {
    const header = archive.subarray(offset, offset + 512);
    if (header.every((byte) => byte === 0)) break;
    const field = (start: number, length: number) =>
      header
        .subarray(start, start + length)
        .toString("utf8")
        .replace(/\0.*$/s, "");
    const size = Number.parseInt(field(124, 12).trim() || "0", 8);
    const type = field(156, 1) || "0";
    const prefix = field(345, 155);
    const name = longName ?? (prefix ? `${prefix}/${field(0, 100)}` : field(0, 100));
    longName = undefined;
    const body = archive.subarray(offset + 512, offset + 512 + size);
    if (type === "x") {
      const path = /\d+ path=([^\n]*)\n/.exec(body.toString("utf8"))?.[1];
      if (path) longName = path;
    } else if (type === "L") {
      longName = body.toString("utf8").replace(/\0.*$/s, "");
    } else if (type === "0" || type === "\0") {
      files.set(name, Buffer.from(body));
    }
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  return files;
}

/** Why the registry gave no baseline; `transient` when asking again later may give another answer. */
export interface RegistryMiss {
  reason: string;
  transient?: boolean;
}

/** Where {@link checkCompatibility} keeps the registry's last answer, and for how long it holds. */
export interface RegistryCache {
  dir: string;
  maxAgeMs: number;
  now?: () => number;
}

interface CachedAnswer {
  registry: string;
  packageName: string;
  askedAt: number;
  answer: Baseline | RegistryMiss;
}

/**
 * The registry's answer as {@link schemasFromRegistry} gives it, kept in `cache.dir` for
 * `cache.maxAgeMs`, so a run soon after another does not ask again. Only definite answers are
 * kept (the latest version's schemas, not published, no schemas); an unreachable registry or an
 * error answer is asked again next time. The label or reason says how old a kept answer is.
 */
export async function cachedSchemasFromRegistry(
  registry: string,
  packageName: string,
  cache: RegistryCache,
  ask: typeof schemasFromRegistry = schemasFromRegistry,
): Promise<Baseline | RegistryMiss> {
  const now = cache.now ?? Date.now;
  const file = join(cache.dir, `${packageName.replace(/[^a-z0-9.-]/gi, "_")}.json`);
  try {
    const kept = JSON.parse(await readFile(file, "utf8")) as CachedAnswer;
    const age = now() - kept.askedAt;
    if (kept.registry === registry && kept.packageName === packageName && age >= 0 && age <= cache.maxAgeMs) {
      const minutes = `${Math.round(age / 60_000)} min ago`;
      return "reason" in kept.answer
        ? { reason: `${kept.answer.reason} (asked ${minutes}, kept in ${file})` }
        : { label: `${kept.answer.label} (asked ${minutes})`, schemas: kept.answer.schemas };
    }
  } catch {
    // No answer kept, or one that cannot be read: ask.
  }
  const answer = await ask(registry, packageName);
  if (!("reason" in answer && answer.transient)) {
    const kept: CachedAnswer = { registry, packageName, askedAt: now(), answer };
    await mkdir(cache.dir, { recursive: true });
    const temporary = `${file}.${process.pid}.tmp`;
    await writeFile(temporary, JSON.stringify(kept));
    await rename(temporary, file);
  }
  return answer;
}

/**
 * The schemas shipped in the latest published version of the package, or the reason there
 * are none (not published, registry unreachable, no schemas in the package).
 */
export async function schemasFromRegistry(
  registry: string,
  packageName = PACKAGE_NAME,
  timeoutMilliseconds = 15_000,
): Promise<Baseline | RegistryMiss> {
  const base = registry.endsWith("/") ? registry : `${registry}/`;
  let metadata: {
    "dist-tags"?: { latest?: string };
    versions?: Record<string, { dist?: { tarball?: string } }>;
  };
  try {
    const response = await fetch(`${base}${packageName.replace("/", "%2f")}`, {
      headers: { accept: "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8" },
      signal: AbortSignal.timeout(timeoutMilliseconds),
    });
    if (response.status === 404) return { reason: `${packageName} is not published on ${base}` };
    if (!response.ok) return { reason: `${base} answered ${response.status}`, transient: true };
    metadata = (await response.json()) as typeof metadata;
  } catch (error) {
    return { reason: `${base} is not reachable (${(error as Error).message})`, transient: true };
  }
  const latest = metadata["dist-tags"]?.latest;
  const tarball = latest ? metadata.versions?.[latest]?.dist?.tarball : undefined;
  if (!latest || !tarball) return { reason: `${packageName} has no latest version on ${base}` };
  let files: Map<string, Buffer>;
  try {
    const response = await fetch(tarball, { signal: AbortSignal.timeout(timeoutMilliseconds) });
    if (!response.ok) return { reason: `${tarball} answered ${response.status}`, transient: true };
    files = readTarball(new Uint8Array(await response.arrayBuffer()));
  } catch (error) {
    return { reason: `${tarball} could not be read (${(error as Error).message})`, transient: true };
  }
  const schemas: Record<string, JsonSchema> = {};
  for (const [path, content] of files) {
    const match = /^package\/(?:dist\/)?schemas\/([^/]+)\.schema\.json$/.exec(path);
    if (match) schemas[match[1]!] = JSON.parse(content.toString("utf8")) as JsonSchema;
  }
  if (Object.keys(schemas).length === 0) {
    return { reason: `${packageName}@${latest} on ${base} ships no schemas` };
  }
  return { label: `npm ${packageName}@${latest}`, schemas };
}

/** Names of changeset files that bump `packageName` by a major version. */
export function majorChangesetNames(
  files: readonly { name: string; text: string }[],
  packageName = PACKAGE_NAME,
): string[] {
  const names: string[] = [];
  for (const { name, text } of files) {
    const frontmatter = /^---\r?\n([\s\S]*?)\r?\n---/.exec(text)?.[1];
    if (frontmatter === undefined) continue;
    let bumps: unknown;
    try {
      bumps = parseYaml(frontmatter);
    } catch {
      continue;
    }
    if (
      typeof bumps === "object" &&
      bumps !== null &&
      (bumps as Record<string, unknown>)[packageName] === "major"
    ) {
      names.push(name);
    }
  }
  return names;
}

/** Reads the pending changesets of a `.changeset` folder (missing folder: none). */
export async function readChangesets(folder: string): Promise<{ name: string; text: string }[]> {
  const names = await readdir(folder).catch(() => [] as string[]);
  const files: { name: string; text: string }[] = [];
  for (const name of names.sort()) {
    if (!name.endsWith(".md") || name.toLowerCase() === "readme.md") continue;
    files.push({ name, text: await readFile(join(folder, name), "utf8") });
  }
  return files;
}

/** The decision: breaking changes pass only with a major changeset. Pure. */
export function decide(
  baseline: Baseline | undefined,
  current: Record<string, JsonSchema>,
  majorChangesets: string[],
  noBaselineReason?: string,
): CompatResult {
  if (!baseline) {
    return { baseline, noBaselineReason, changes: [], breaking: [], majorChangesets, ok: true };
  }
  const changes = compareSchemaSets(baseline.schemas, current);
  const breaking = changes.filter((change) => change.severity === "breaking");
  return {
    baseline,
    changes,
    breaking,
    majorChangesets,
    ok: breaking.length === 0 || majorChangesets.length > 0,
  };
}

/** Where to look, for {@link checkCompatibility}. */
export interface CompatOptions {
  root: string;
  schemasPath?: string;
  changesetPath?: string;
  packageName?: string;
  /** npm registry to ask when no git tag exists; `false` skips the registry. */
  registry?: string | false;
  /** Keep the registry's answer for a while instead of asking on every run. */
  registryCache?: RegistryCache;
}

/** Runs the whole check: baseline from the newest tag, else the registry, else none. */
export async function checkCompatibility(options: CompatOptions): Promise<CompatResult> {
  const schemasPath = options.schemasPath ?? "schemas";
  const packageName = options.packageName ?? PACKAGE_NAME;
  const current = await readSchemaFolder(join(options.root, schemasPath));
  const majors = majorChangesetNames(
    await readChangesets(join(options.root, options.changesetPath ?? ".changeset")),
    packageName,
  );
  const tag = await newestReleaseTag(options.root, packageName);
  if (tag) {
    const schemas = await schemasAtRevision(options.root, `refs/tags/${tag}`, schemasPath);
    return decide({ label: `git tag ${tag}`, schemas }, current, majors);
  }
  if (options.registry === false) {
    return decide(undefined, current, majors, `no ${packageName}@* git tag, and the registry was not asked`);
  }
  const registry = options.registry ?? "https://registry.npmjs.org/";
  const fromRegistry = options.registryCache
    ? await cachedSchemasFromRegistry(registry, packageName, options.registryCache)
    : await schemasFromRegistry(registry, packageName);
  if ("reason" in fromRegistry) {
    return decide(undefined, current, majors, `no ${packageName}@* git tag, and ${fromRegistry.reason}`);
  }
  return decide(fromRegistry, current, majors);
}

/** The human-readable report, one line per change, and a verdict line last. */
export function formatReport(result: CompatResult, packageName = PACKAGE_NAME): string {
  if (!result.baseline) {
    return `compat: no baseline to compare with (${result.noBaselineReason ?? "no release found"}); passing.`;
  }
  const lines = [`compat: comparing schemas/ with ${result.baseline.label}`];
  for (const change of result.changes) {
    const where = change.path ? `${change.schema}.${change.path}` : change.schema;
    lines.push(`  ${change.severity.padEnd(8)}  ${where}: ${change.message} [${change.rule}]`);
  }
  if (result.changes.length === 0) lines.push("  no schema changes");
  if (result.breaking.length === 0) {
    lines.push(`compat: ok, ${result.changes.length} additive change(s).`);
  } else if (result.ok) {
    lines.push(
      `compat: ok, ${result.breaking.length} breaking change(s) covered by a major changeset (${result.majorChangesets.join(", ")}).`,
    );
  } else {
    lines.push(
      `compat: ${result.breaking.length} breaking change(s) and no major changeset for ${packageName}; ` +
        "make the change additive, or run 'pnpm changeset' and choose a major bump.",
    );
  }
  return lines.join("\n");
}

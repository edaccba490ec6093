/**
 * The import rules `pnpm run cycles` checks besides cycles, over the same graph madge builds:
 *
 * 1. In the daemon (apps/daemon/src), a stage calls down, never back up. The stages, in the order
 *    a dispatch passes through them, are intake/ → run/ → await/ → finish/ → deliver/ → land/: a
 *    stage may import a later stage and the shared modules below all stages, never an earlier
 *    stage. The shared modules (worktree/, spend/, lock/, gstack-run/ and the files at
 *    src/ that are not listed as joining the stages) import no stage. Nothing below the top
 *    imports the top: the coordinator (dispatch/), the daemon and its start-up, the commands and
 *    the service API, which join the stages.
 * 2. A library (packages/*) never imports an app (apps/*), by a relative path or by its package
 *    name. Tests, test worlds, the offline demo and the command entries that bundle an app's command
 *    into the plugin's tarball (packages/openclaw-plugin/src/bin/) are not the library.
 *
 * Each broken rule is one line naming the file, the import and the rule; the exit code is 1.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import madge from "madge";
import ts from "typescript";

const root = join(import.meta.dirname, "..");
const daemonSrc = "apps/daemon/src";

/** The daemon's stages, in the order a dispatch passes through them. */
export const STAGES = ["intake", "run", "await", "finish", "deliver", "land"] as const;
/** Folders below every stage, that any stage may use. */
export const SHARED_FOLDERS = ["worktree", "spend", "lock", "gstack-run"] as const;
/** What joins the stages: it may import any of them, and nothing below imports it. */
export const TOP_FOLDERS = ["dispatch", "commands", "service-api", "service-install", "doctor"] as const;
export const TOP_FILES = [
  "index.ts",
  "cli.ts",
  "cli-main.ts",
  "daemon.ts",
  "lifecycle.ts",
  "recovery.ts",
  "demo.ts",
] as const;

/**
 * Test files (and the suites one runs), the worlds and fixtures they build on compose any parts,
 * so no rule holds them.
 */
export function isTestOnly(file: string): boolean {
  return /\.test\.ts$|\.e2e-suite\.ts$|test-support|-world\.ts$|fixture\.ts$/.test(file);
}

type Place =
  | { kind: "top" }
  | { kind: "stage"; stage: (typeof STAGES)[number]; rank: number }
  | { kind: "shared" };

/** Where a daemon source file (relative to apps/daemon/src) sits. */
export function placeOf(file: string): Place {
  const [first, ...rest] = file.split("/");
  if (rest.length === 0)
    return (TOP_FILES as readonly string[]).includes(file) ? { kind: "top" } : { kind: "shared" };
  if ((TOP_FOLDERS as readonly string[]).includes(first ?? "")) return { kind: "top" };
  const rank = (STAGES as readonly string[]).indexOf(first ?? "");
  if (rank >= 0) return { kind: "stage", stage: STAGES[rank] as (typeof STAGES)[number], rank };
  if ((SHARED_FOLDERS as readonly string[]).includes(first ?? "")) return { kind: "shared" };
  throw new Error(
    `${daemonSrc}/${file}: the folder ${first}/ has no place in the daemon's order; add it to STAGES, SHARED_FOLDERS or TOP_FOLDERS in scripts/check-layers.ts (and the daemon README's "Where things live")`,
  );
}

/** The broken rule of one import inside the daemon, or undefined. */
export function daemonRuleBroken(from: string, to: string): string | undefined {
  const a = placeOf(from);
  const b = placeOf(to);
  if (a.kind === "top") return undefined;
  if (b.kind === "top") {
    return `nothing below the top imports what joins the stages (${to.split("/").length > 1 ? `${to.split("/")[0]}/` : to} is top)`;
  }
  if (a.kind === "shared" && b.kind === "stage") {
    return `a shared module imports no stage (${b.stage}/ is a stage; move what both need below the stages)`;
  }
  if (a.kind === "stage" && b.kind === "stage" && b.rank < a.rank) {
    return `stages call down, never back up: ${a.stage}/ comes after ${b.stage}/ (${STAGES.join(" → ")})`;
  }
  return undefined;
}

/**
 * Files of a package that are not its library: the command entries that bundle an app's command
 * into the plugin's tarball, and the offline demo, which runs a daemon and a gateway as the test
 * worlds do (`pnpm demo`; no build entry reaches it).
 */
const NOT_THE_LIBRARY = [
  /^packages\/openclaw-plugin\/src\/bin\//,
  /^packages\/openclaw-plugin\/src\/demo\.ts$/,
];

function appNames(): Map<string, string> {
  const names = new Map<string, string>();
  for (const folder of readdirSync(join(root, "apps"))) {
    try {
      const { name } = JSON.parse(readFileSync(join(root, "apps", folder, "package.json"), "utf8")) as {
        name: string;
      };
      names.set(name, `apps/${folder}`);
    } catch {}
  }
  return names;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) {
      if (entry.name !== "node_modules" && entry.name !== "dist") out.push(...sourceFiles(path));
    } else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

/** Every import specifier of a file, as written (static, type-only, re-exports and `import()`). */
function specifiersOf(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(join(root, file), "utf8"), true, true);
  return info.importedFiles.map((entry) => entry.fileName);
}

export async function checkLayers(): Promise<string[]> {
  const problems: string[] = [];
  // 1. The daemon's stages, over madge's graph of the daemon's own files.
  const graph = (
    await madge(join(root, daemonSrc), { fileExtensions: ["ts"], baseDir: join(root, daemonSrc) })
  ).obj();
  for (const [from, imports] of Object.entries(graph)) {
    if (isTestOnly(from)) continue;
    for (const to of imports) {
      if (to.startsWith("..") || isTestOnly(to)) continue;
      const rule = daemonRuleBroken(from, to);
      if (rule) problems.push(`${daemonSrc}/${from} imports ${daemonSrc}/${to}: ${rule}`);
    }
  }
  // 2. Libraries never import apps. madge resolves relative paths but not workspace package
  // names (it lists them as skipped, without the file), so the specifiers are read as written.
  const apps = appNames();
  for (const file of sourceFiles("packages")) {
    if (isTestOnly(file) || NOT_THE_LIBRARY.some((pattern) => pattern.test(file))) continue;
    for (const specifier of specifiersOf(file)) {
      const app = specifier.startsWith(".")
        ? relative(root, join(root, file, "..", specifier)).startsWith("apps/")
          ? relative(root, join(root, file, "..", specifier))
          : undefined
        : [...apps.keys()].find((name) => specifier === name || specifier.startsWith(`${name}/`));
      if (!app) continue;
      problems.push(
        `${file} imports "${specifier}": a library never imports an app (${app} is an app; what a library needs of it belongs in a package, such as @gstack/daemon-client)`,
      );
    }
  }
  return problems;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const problems = await checkLayers();
  for (const problem of problems) console.error(problem);
  if (problems.length > 0) {
    console.error(
      `${problems.length} import${problems.length === 1 ? " breaks" : "s break"} the layering rules (scripts/check-layers.ts)`,
    );
    process.exit(1);
  }
}

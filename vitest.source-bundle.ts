import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

// Tests that start a package's command or a script of its source in a real Node process load
// it from one file that esbuild bundled from the source, not module by module through tsx, which
// compiled each of the source's files on every start (0.6-0.9 s of CPU a process). Shared by
// every package (as vitest.load-budget.ts is): esbuild is the package's own dev dependency.

/** The part of esbuild's API used here (the package's own esbuild provides it). */
interface Esbuild {
  build(options: Record<string, unknown>): Promise<{
    outputFiles?: Array<{ path: string; contents: Uint8Array }>;
    metafile?: { inputs: Record<string, unknown> };
  }>;
}

interface OnLoadArgs {
  path: string;
}
interface PluginBuild {
  onResolve(
    options: { filter: RegExp },
    callback: (args: { path: string }) => { path: string } | undefined,
  ): void;
  onLoad(
    options: { filter: RegExp },
    callback: (args: OnLoadArgs) => { contents: string; loader: string; resolveDir: string } | undefined,
  ): void;
}

/**
 * Each bundled file of the source keeps its own `import.meta.url`, `import.meta.dirname` and
 * `import.meta.filename`, so code that finds files beside itself (the built command, a shipped
 * folder, a package's node_modules) finds what it finds when it runs from source. An import by
 * `file:` URL, as scripts written by tests have them, is read as the path it names.
 */
const asFromSource = {
  name: "as-from-source",
  setup(build: PluginBuild) {
    build.onResolve({ filter: /^file:\/\// }, (args) => ({ path: fileURLToPath(args.path) }));
    build.onLoad({ filter: /\.[cm]?ts$/ }, (args) => {
      if (args.path.includes("/node_modules/")) return undefined;
      const contents = readFileSync(args.path, "utf8")
        .replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href))
        .replaceAll("import.meta.dirname", JSON.stringify(dirname(args.path)))
        .replaceAll("import.meta.filename", JSON.stringify(args.path));
      return { contents, loader: "ts", resolveDir: dirname(args.path) };
    });
  },
};

/** What to bundle: see {@link sourceBundle}. */
export interface BundleRequest {
  packageDir: string;
  name: string;
  entry?: string;
  contents?: string;
  resolveDir?: string;
  argv1?: string;
}

const bundleFolder = (packageDir: string) =>
  join(packageDir, "node_modules", ".cache", "gstack-source-bundles");

/**
 * What a bundle was built from: the request, and each source file that went into it with the
 * hash of its content. Written beside the bundle, so a later test process whose request and
 * sources are the same takes the bundle without building it again.
 */
interface BundleRecord {
  request: string;
  file: string;
  inputs: Record<string, string>;
}

const recordPath = (request: BundleRequest) => join(bundleFolder(request.packageDir), `${request.name}.json`);
const contentHash = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

/** The bundle built before for the same request from the same sources, or undefined. */
function builtBefore(request: BundleRequest, key: string): string | undefined {
  try {
    const record = JSON.parse(readFileSync(recordPath(request), "utf8")) as BundleRecord;
    if (record.request !== key || !existsSync(record.file)) return undefined;
    for (const [path, hash] of Object.entries(record.inputs))
      if (contentHash(path) !== hash) return undefined;
    return record.file;
  } catch {
    return undefined; // no record yet, or a source gone: built again
  }
}

/** Writes `text` at `path` through a file beside it, so a reader never sees half of it. */
function writeWhole(path: string, text: string | Uint8Array): void {
  const partial = `${path}.${process.pid}.partial`;
  writeFileSync(partial, text);
  renameSync(partial, path);
}

/** Builds the bundle a request asks for (esbuild's plugins need its asynchronous API). */
async function build(request: BundleRequest): Promise<string> {
  const esbuild = createRequire(join(request.packageDir, "package.json"))("esbuild") as Esbuild;
  const folder = bundleFolder(request.packageDir);
  const output = await esbuild.build({
    ...(request.entry
      ? { entryPoints: [request.entry] }
      : {
          stdin: {
            contents: request.contents ?? "",
            resolveDir: request.resolveDir ?? request.packageDir,
            sourcefile: `${request.name}-entry.ts`,
            loader: "ts",
          },
        }),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node24",
    packages: "external",
    sourcemap: "inline",
    plugins: [asFromSource],
    ...(request.argv1 ? { banner: { js: `process.argv[1] = ${JSON.stringify(request.argv1)};` } } : {}),
    outfile: join(folder, `${request.name}.mjs`),
    write: false,
    metafile: true,
    absWorkingDir: request.packageDir,
    logLevel: "error",
  });
  const code = output.outputFiles?.[0]?.contents;
  if (!code) throw new Error(`bundling ${request.entry ?? request.name} gave no output`);
  const hash = createHash("sha256").update(code).digest("hex").slice(0, 16);
  const file = join(folder, `${request.name}-${hash}.mjs`);
  mkdirSync(folder, { recursive: true });
  // A test file starting at the same moment never reads half of it.
  if (!existsSync(file)) writeWhole(file, code);
  const inputs: Record<string, string> = {};
  for (const input of Object.keys(output.metafile?.inputs ?? {})) {
    const path = join(request.packageDir, input);
    // The entry given as text is no file (its text is part of the request).
    if (!request.entry && !existsSync(path)) continue;
    inputs[path] = contentHash(path);
  }
  const record: BundleRecord = { request: JSON.stringify(request), file, inputs };
  writeWhole(recordPath(request), JSON.stringify(record));
  return file;
}

const built = new Map<string, string>();

/**
 * The path of an ES module bundled from `entry` (a source file) or from `contents` (a module's
 * text, its imports resolved from `resolveDir`): the package's own source, and any other source
 * file it names by path, in one file; packages (dependencies and the workspace's libraries,
 * as their `exports` give them) stay imports, resolved from `packageDir`'s node_modules as the
 * source resolves them. With an inline source map, so with `--enable-source-maps` a stack names
 * the .ts lines. `argv1` makes `process.argv[1]` what it is when the source runs as
 * `node --import tsx <argv1>`, for a command that looks at the path it was started by.
 *
 * Built from the source as it is now (never from a stale dist/), by this file run as a script
 * (a test needs the path at once, and esbuild's plugins run only in its asynchronous API). The
 * file is named by its content under `packageDir`'s node_modules/.cache, with a record of the
 * sources it was built from (each by the hash of its content): a test process asking for it
 * again, in this run or a later one, takes it as long as those sources are unchanged, and a
 * change of any of them builds it again.
 */
export function sourceBundle(request: BundleRequest): string {
  const key = JSON.stringify(request);
  const known = built.get(key) ?? builtBefore(request, key);
  if (known) {
    built.set(key, known);
    return known;
  }
  const file = execFileSync(process.execPath, ["--no-warnings", fileURLToPath(import.meta.url)], {
    input: key,
    encoding: "utf8",
    stdio: ["pipe", "pipe", "inherit"],
  }).trim();
  built.set(key, file);
  return file;
}

/**
 * The arguments for Node that run `entry` (a package's command or script, in its source) as
 * `node --import tsx <entry>` would, from its bundle: `spawn(process.execPath, [...nodeArgs, ...args])`.
 */
export function sourceCommand(packageDir: string, entry: string): string[] {
  return [
    "--enable-source-maps",
    sourceBundle({ packageDir, name: bundleName(packageDir, entry), entry, argv1: entry }),
  ];
}

/** A bundle's name for a source file: its path from `packageDir`, in letters, digits and dashes. */
export function bundleName(packageDir: string, entry: string): string {
  return relative(packageDir, entry)
    .replace(/\.[cm]?ts$/, "")
    .replace(/[^A-Za-z0-9]+/g, "-")
    .replace(/^-+/, "");
}

// Run as a script (`node vitest.source-bundle.ts`, Node strips the types): builds the bundle the
// request on stdin asks for and prints its path.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  process.stdout.write(
    `${await build(JSON.parse(Buffer.concat(chunks).toString("utf8")) as BundleRequest)}\n`,
  );
}

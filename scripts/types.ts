// Type-checks the whole workspace as one TypeScript program and writes each package's published
// type declarations from it: `dist/index.d.ts` (and any other entry its package.json exports with
// "types"), one bundled file per entry, as consumers on any module resolution can read it.
//
//   tsx scripts/types.ts   check every file, then write the declarations
//                          (`pnpm run typecheck` is the same check alone: plain `tsc`)
//
// Why one program: a package's declarations built on their own (a TypeScript program per package,
// after its dependencies' declarations) read the libraries' types, Node's and zod's again for each
// of fourteen packages, one after another along the dependency chain. Here the workspace packages
// resolve to one another's sources (the "@gstack/source" export condition, which tsconfig.base.json
// names), every file is read and checked once, and the declarations of the packages' own sources
// are emitted by the same program; rollup-plugin-dts then joins each entry's into one file.
import { mkdir, readFile, rm } from "node:fs/promises";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { rollup } from "rollup";
import { dts } from "rollup-plugin-dts";
import ts from "typescript";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
// Outside node_modules: the bundler takes anything under a node_modules folder for a library of
// someone else's and would leave the package's own files as imports.
const emitted = join(root, ".types");

/** A workspace package's published type entries: its folder and, per entry, source and output. */
interface TypedPackage {
  name: string;
  folder: string;
  entries: { source: string; output: string }[];
}

/** Each workspace package whose package.json exports types, read from the workspace's folders. */
async function typedPackages(): Promise<TypedPackage[]> {
  const found: TypedPackage[] = [];
  for (const parent of ["packages", "apps"]) {
    for (const entry of ts.sys.getDirectories(join(root, parent))) {
      const folder = join(root, parent, entry);
      const manifestPath = join(folder, "package.json");
      if (!ts.sys.fileExists(manifestPath)) continue;
      const manifest = JSON.parse(await readFile(manifestPath, "utf8")) as {
        name: string;
        exports?: Record<string, unknown>;
      };
      const entries: TypedPackage["entries"] = [];
      for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
        if (!target || typeof target !== "object") continue;
        const { types, "@gstack/source": source } = target as Record<string, unknown>;
        if (typeof types !== "string") continue;
        if (typeof source !== "string") {
          throw new Error(
            `${relative(root, manifestPath)}: exports["${subpath}"] gives "types" but no "@gstack/source" ` +
              "(the source file its declarations come from, listed before every other condition)",
          );
        }
        entries.push({ source: join(folder, source), output: join(folder, types) });
      }
      if (entries.length > 0) found.push({ name: manifest.name, folder, entries });
    }
  }
  return found;
}

/** The workspace's TypeScript program, from the root tsconfig.json. */
function workspaceProgram(): ts.Program {
  const configPath = join(root, "tsconfig.json");
  const parsed = ts.getParsedCommandLineOfConfigFile(
    configPath,
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"));
      },
    },
  );
  if (!parsed) throw new Error(`${configPath}: could not be read`);
  const options: ts.CompilerOptions = {
    ...parsed.options,
    noEmit: false,
    declaration: true,
    emitDeclarationOnly: true,
    declarationMap: false,
    rootDir: root,
    outDir: emitted,
  };
  return ts.createProgram({
    rootNames: parsed.fileNames,
    options,
    projectReferences: parsed.projectReferences,
  });
}

const formatHost: ts.FormatDiagnosticsHost = {
  getCanonicalFileName: (name) => name,
  getCurrentDirectory: () => root,
  getNewLine: () => "\n",
};

function fail(diagnostics: readonly ts.Diagnostic[]): never {
  const format = process.stdout.isTTY ? ts.formatDiagnosticsWithColorAndContext : ts.formatDiagnostics;
  process.stderr.write(format(diagnostics, formatHost));
  process.stderr.write(`\n${diagnostics.length} type error(s)\n`);
  process.exit(1);
}

/** Whether `file` is one of a package's own published sources (not a test, a bench or a script). */
function publishedSource(file: string, packages: TypedPackage[]): boolean {
  if (/\.(test|e2e-suite)\.ts$/.test(file) || file.endsWith(".d.ts")) return false;
  return packages.some((pkg) => file.startsWith(join(pkg.folder, "src") + sep));
}

/** Where the program wrote the declarations of `source`. */
function emittedFor(source: string): string {
  return join(emitted, relative(root, source)).replace(/\.ts$/, ".d.ts");
}

/**
 * Joins one entry's declarations into one file. Other packages stay imports by name; a relative
 * import that leaves the package (a type TypeScript could name only by another package's source
 * path) is an error, since the published file could not reach it.
 */
async function bundle(pkg: TypedPackage, entry: TypedPackage["entries"][number]): Promise<void> {
  const own = join(emitted, relative(root, pkg.folder), "src") + sep;
  const build = await rollup({
    input: emittedFor(entry.source),
    external: (id) => !id.startsWith(".") && !id.startsWith("/") && !id.startsWith("\0"),
    plugins: [
      {
        name: "stay-in-package",
        resolveId(source, importer) {
          if (!importer || !source.startsWith(".")) return null;
          const target = resolve(dirname(importer), source);
          if (!target.startsWith(own)) {
            throw new Error(
              `${relative(root, importer.replace(emitted, root)).replace(/\.d\.ts$/, ".ts")}: its declarations ` +
                `reach "${source}", outside ${pkg.name}; give the type a name the package exports, ` +
                "or import it by the other package's name",
            );
          }
          return null;
        },
      },
      dts({ respectExternal: false }),
    ],
    onwarn(warning, warn) {
      // Type-only re-exports of names another file also declares are expected; the rest is shown.
      if (warning.code === "CIRCULAR_DEPENDENCY") return;
      warn(warning);
    },
  });
  await mkdir(dirname(entry.output), { recursive: true });
  await build.write({ file: entry.output, format: "es" });
  await build.close();
}

async function main(): Promise<void> {
  const packages = await typedPackages();
  const program = workspaceProgram();
  const diagnostics = ts.getPreEmitDiagnostics(program);
  if (diagnostics.length > 0) fail(diagnostics);

  await rm(emitted, { recursive: true, force: true });
  const emitDiagnostics: ts.Diagnostic[] = [];
  for (const sourceFile of program.getSourceFiles()) {
    if (!publishedSource(sourceFile.fileName, packages)) continue;
    const result = program.emit(sourceFile, undefined, undefined, true);
    emitDiagnostics.push(...result.diagnostics);
  }
  if (emitDiagnostics.length > 0) fail(emitDiagnostics);

  for (const pkg of packages) {
    for (const entry of pkg.entries) await bundle(pkg, entry);
  }
}

try {
  await main();
} catch (error) {
  process.stderr.write(`types: ${(error as Error).message}\n`);
  process.exit(1);
}

/**
 * `pnpm compat`: fails when the schemas changed in a breaking way since the last release of
 * @gstack/contracts without a major changeset. See COMPATIBILITY.md.
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { checkCompatibility, formatReport } from "./compat-check";

const cacheHours = 12;

const usage = `Usage: pnpm compat [--root DIR] [--no-registry] [--registry URL] [--cache DIR] [--json]

Compares schemas/ with the last release of @gstack/contracts (the newest
@gstack/contracts@* git tag, else the latest version on the npm registry) and
exits 1 when a breaking change comes without a major changeset in .changeset/.

  --root DIR       repository root (default: this checkout)
  --registry URL   npm registry to ask when there is no tag (default: npm_config_registry or npmjs)
  --no-registry    do not ask the registry; no tag means no baseline
  --cache DIR      keep the registry's answer in DIR and use it for ${cacheHours} hours
                   (./dev test keeps it in node_modules/.cache/gstack-compat; a fresh
                   clone, as in CI, asks)
  --json           print the result as JSON
  --help           show this help`;

function fail(message: string): never {
  console.error(`compat: ${message}`);
  process.exit(2);
}

const args = process.argv.slice(2);
let root = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
let registry: string | false = process.env.npm_config_registry || "https://registry.npmjs.org/";
let json = false;
let cacheDir: string | undefined;
for (let index = 0; index < args.length; index++) {
  const arg = args[index];
  if (arg === "--help" || arg === "-h") {
    console.log(usage);
    process.exit(0);
  } else if (arg === "--json") json = true;
  else if (arg === "--no-registry") registry = false;
  else if (arg === "--root" || arg === "--registry" || arg === "--cache") {
    const value = args[++index];
    if (!value) fail(`${arg} needs a value`);
    if (arg === "--root") root = resolve(value);
    else if (arg === "--cache") cacheDir = resolve(value);
    else registry = value;
  } else fail(`unknown option ${arg} (see --help)`);
}

try {
  const result = await checkCompatibility({
    root,
    registry,
    ...(cacheDir ? { registryCache: { dir: cacheDir, maxAgeMs: cacheHours * 3_600_000 } } : {}),
  });
  if (json) console.log(JSON.stringify(result, (key, value) => (key === "schemas" ? undefined : value), 2));
  else console.log(formatReport(result));
  process.exit(result.ok ? 0 : 1);
} catch (error) {
  fail((error as Error).message.split("\n")[0] ?? String(error));
}

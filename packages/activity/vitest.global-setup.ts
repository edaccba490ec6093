import { execFileSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";

/**
 * The CLI and multi-process tests run the built package, as users do. Rebuild first when
 * `dist` is missing or older than any source file, so a test never runs stale code.
 */
export default function setup(): void {
  const packageDir = import.meta.dirname;
  const built = join(packageDir, "dist", "cli.js");
  let builtAt = 0;
  try {
    builtAt = statSync(built).mtimeMs;
  } catch {
    builtAt = 0;
  }
  const newestSource = Math.max(
    ...readdirSync(join(packageDir, "src"), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => statSync(join(entry.parentPath, entry.name)).mtimeMs),
  );
  if (newestSource > builtAt) execFileSync("tsup", [], { cwd: packageDir, stdio: "inherit" });
}

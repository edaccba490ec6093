import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The gstack release the acceptance tests run against. */
export const REAL_GSTACK_VERSION = "1.68.3.0";

/**
 * Finds the real gstack corpus: `GSTACK_CORPUS` when set, else `shared/corpus/gstack-<version>`
 * beside the checkout or beside any folder above it (CI keeps `shared/` next to the checkout).
 */
export function findRealCorpus(): string | undefined {
  const fromEnvironment = process.env["GSTACK_CORPUS"];
  if (fromEnvironment) return existsSync(fromEnvironment) ? fromEnvironment : undefined;
  let folder = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(folder, "shared", "corpus", `gstack-${REAL_GSTACK_VERSION}`);
    if (existsSync(join(candidate, "SKILL.md"))) return candidate;
    const parent = dirname(folder);
    if (parent === folder) return undefined;
    folder = parent;
  }
}

/** The title suffix a corpus test carries when it is skipped, so the run says why. */
export function corpusSkipNote(corpus: string | undefined): string {
  return corpus === undefined
    ? ` (SKIPPED: the real gstack ${REAL_GSTACK_VERSION} corpus is not in shared/corpus beside the checkout; set GSTACK_CORPUS)`
    : "";
}

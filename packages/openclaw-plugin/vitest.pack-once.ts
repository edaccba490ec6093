import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PACKED_PLUGIN_ENV, packPlugin } from "./src/openclaw-world";

/**
 * Packs the built plugin once for the whole test run, the way it is published (`pnpm pack`),
 * and hands the tarball to every test file through the environment: `packPlugin` in a test then
 * copies it instead of running `pnpm pack` again (ten times a run before, seconds each).
 */
export default async function setup(): Promise<() => Promise<void>> {
  const folder = await mkdtemp(join(tmpdir(), "gstack-plugin-pack-"));
  process.env[PACKED_PLUGIN_ENV] = await packPlugin(join(folder, "pack"));
  return async () => {
    delete process.env[PACKED_PLUGIN_ENV];
    await rm(folder, { recursive: true, force: true });
  };
}

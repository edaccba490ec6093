import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeOpenClawHome } from "@gstack/openclaw-testbed";
import {
  INSTALLED_PLUGIN_ENV,
  INSTALLED_RECORDING_CHANNEL_ENV,
  installPlugin,
  installRecordingChannelOnce,
  PACKED_PLUGIN_ENV,
  packPlugin,
} from "./src/openclaw-world";

/**
 * Packs the built plugin once for the whole test run, the way it is published (`pnpm pack`),
 * and installs that tarball once into a throw-away OpenClaw home with the real
 * `openclaw plugins install`. Both reach every test file through the environment: `packPlugin`
 * then copies the tarball instead of running `pnpm pack` again, and `installPlugin` copies the
 * installed plugin folder instead of running the install again (seconds each, for every file).
 * The recording channel the person-facing tests use is installed once the same way
 * (`installRecordingChannel` copies it).
 */
export default async function setup(): Promise<() => Promise<void>> {
  const folder = await mkdtemp(join(tmpdir(), "gstack-plugin-pack-"));
  process.env[PACKED_PLUGIN_ENV] = await packPlugin(join(folder, "pack"));
  const home = await makeOpenClawHome();
  await installPlugin(home, process.env[PACKED_PLUGIN_ENV]);
  process.env[INSTALLED_PLUGIN_ENV] = join(home.stateDir, "extensions", "gstack");
  process.env[INSTALLED_RECORDING_CHANNEL_ENV] = await installRecordingChannelOnce(
    home,
    join(folder, "recording-chat"),
  );
  return async () => {
    delete process.env[PACKED_PLUGIN_ENV];
    delete process.env[INSTALLED_PLUGIN_ENV];
    delete process.env[INSTALLED_RECORDING_CHANNEL_ENV];
    await rm(folder, { recursive: true, force: true });
    await home.remove();
  };
}

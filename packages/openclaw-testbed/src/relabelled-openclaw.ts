import {
  copyFile,
  link,
  mkdir,
  readdir,
  readFile,
  realpath,
  rename,
  symlink,
  writeFile,
} from "node:fs/promises";
import { dirname, join } from "node:path";
import { openclawPackageDir, openclawVersion } from "./run-openclaw";

/**
 * The pinned OpenClaw, reporting `version` as its own: the same code (its files hard-linked,
 * copied where the file system cannot link), with only `dist/build-info.json` rewritten, which
 * is where OpenClaw reads its product version for `openclaw --version` and for plugins'
 * `api.runtime.version`. It stands in for an OpenClaw release the registry here does not offer,
 * to see what a plugin does on a version it was not tested with; every behaviour but the number
 * is the pinned version's. Made under `folder` (remove it when done); returns the entry script
 * to run with the current Node, as `openclawBin()` is.
 */
export async function relabelledOpenClaw(version: string, folder: string): Promise<string> {
  const real = await realpath(openclawPackageDir);
  const modules = join(folder, "node_modules");
  const copy = join(modules, "openclaw");
  await mkdir(copy, { recursive: true });
  // Its dependencies are the pinned package's own, found beside the copy as they are beside it.
  for (const entry of await readdir(dirname(real), { withFileTypes: true })) {
    if (entry.name === "openclaw") continue;
    await symlink(join(dirname(real), entry.name), join(modules, entry.name));
  }
  // Node resolves a module by its real path, so the code must be files of the copy's own
  // (linked), not symbolic links back to the package; folders of data may stay links.
  for (const entry of await readdir(real, { withFileTypes: true })) {
    const from = join(real, entry.name);
    const to = join(copy, entry.name);
    if (entry.isFile()) await linkOrCopy(from, to);
    else if (entry.name === "dist") await linkTree(from, to);
    else await symlink(from, to);
  }
  const buildInfo = join(copy, "dist", "build-info.json");
  const info = JSON.parse(await readFile(buildInfo, "utf8")) as { version?: string };
  if (info.version !== openclawVersion) {
    throw new Error(`${buildInfo} names ${info.version}, not the pinned ${openclawVersion}`);
  }
  // A new file renamed over the link (never a write through it), so the pinned package's own
  // build-info is left as it was.
  await writeFile(`${buildInfo}.new`, `${JSON.stringify({ ...info, version }, null, 2)}\n`);
  await rename(`${buildInfo}.new`, buildInfo);
  return join(copy, "openclaw.mjs");
}

async function linkOrCopy(from: string, to: string): Promise<void> {
  await link(from, to).catch(() => copyFile(from, to));
}

async function linkTree(from: string, to: string): Promise<void> {
  await mkdir(to, { recursive: true });
  for (const entry of await readdir(from, { withFileTypes: true })) {
    if (entry.isDirectory()) await linkTree(join(from, entry.name), join(to, entry.name));
    else if (entry.isFile()) await linkOrCopy(join(from, entry.name), join(to, entry.name));
    else if (entry.isSymbolicLink())
      await symlink(await realpath(join(from, entry.name)), join(to, entry.name));
  }
}

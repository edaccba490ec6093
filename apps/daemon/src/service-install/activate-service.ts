import { mkdir, readFile, rm, rmdir } from "node:fs/promises";
import { dirname } from "node:path";
import { writeFileAtomic } from "@gstack/contracts";
import { DaemonError, entryExists } from "@gstack/daemon-client";
import { runStep, stepText } from "./run-step";
import { activationSteps, refusalHint, type ServiceFiles } from "./service-files";

/** The folders `mkdir -p` would create for `folder`, outermost first. */
async function missingFolders(folder: string): Promise<string[]> {
  const missing: string[] = [];
  let current = folder;
  while (!(await entryExists(current))) {
    missing.unshift(current);
    const parent = dirname(current);
    if (parent === current) break;
    current = parent;
  }
  return missing;
}

/**
 * Writes the unit and has the service manager load and start it. When the manager refuses,
 * everything this wrote is undone (the unit restored to what it was, links and new folders
 * removed) and a DaemonError carries the manager's own words and what to do.
 * `report` receives one line per step, once every step has succeeded.
 */
export async function activateService(
  files: ServiceFiles,
  unitText: string,
  options: { uid: number; report: (line: string) => void },
): Promise<void> {
  const previous = await readFile(files.unit, "utf8").catch(() => undefined);
  const newFolders = await missingFolders(dirname(files.unit));
  const linkFolders = (await Promise.all(files.links.map((link) => missingFolders(dirname(link))))).flat();
  const linksBefore = await Promise.all(files.links.map(entryExists));
  await mkdir(dirname(files.unit), { recursive: true });
  await writeFileAtomic(files.unit, unitText, { mode: 0o644 });
  const done = [`wrote ${files.unit}`];
  for (const step of activationSteps(files, options.uid)) {
    const result = await runStep(step);
    if (result.ok) {
      done.push(`ran: ${stepText(step)}`);
      continue;
    }
    if (!step.required) continue;
    for (const [index, link] of files.links.entries()) {
      if (!linksBefore[index]) await rm(link, { force: true });
    }
    if (previous === undefined) await rm(files.unit, { force: true });
    else await writeFileAtomic(files.unit, previous, { mode: 0o644 });
    for (const folder of [...linkFolders, ...newFolders].reverse()) await rmdir(folder).catch(() => {});
    const manager = files.platform === "darwin" ? "launchd" : "systemd";
    throw new DaemonError(
      `${manager} refused: \`${stepText(step)}\` said: ${result.cause}; nothing was installed` +
        `${previous === undefined ? "" : " (the earlier unit is back in place)"}; ${refusalHint(files.platform, result.cause)}`,
    );
  }
  for (const line of done) options.report(line);
}

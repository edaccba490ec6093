import { readFile } from "node:fs/promises";
import {
  type DispatchSettings,
  type GstackLayout,
  parseYaml,
  type Restriction,
  resolveDispatchSettings,
} from "@gstack/contracts";

/** The dispatch settings from `config.yaml` and the warnings a person should see. */
export async function loadSettings(
  layout: GstackLayout,
): Promise<{ settings: DispatchSettings; warnings: string[] }> {
  const text = await readConfigFile(layout.config);
  const file = parseYaml("daemon-config", text?.trim() ? text : "{}", { source: layout.config });
  const { settings, conflicts } = resolveDispatchSettings(file, { source: layout.config });
  const warnings = conflicts.map(
    (conflict) =>
      `${layout.config}: dispatch_${conflict.setting} (${JSON.stringify(conflict.flat)}) overrides dispatch.${conflict.setting} (${JSON.stringify(conflict.nested)})`,
  );
  return { settings, warnings };
}

/** Patterns refused in every dispatch, whatever the restriction templates say. */
export const DEFAULT_DISALLOWED_TOOLS = [
  "Bash(git push --force:*)",
  "Bash(git push -f:*)",
  "Bash(rm -rf /:*)",
  "Bash(sudo:*)",
];

/** Reads `restrictions.yaml` when it exists. */
export async function loadRestrictions(layout: GstackLayout): Promise<Restriction[]> {
  const text = await readConfigFile(layout.restrictions);
  if (text === undefined) return [];
  return parseYaml("restriction-template", text, { source: layout.restrictions }).restrictions;
}

/**
 * Reads a configuration file; undefined when it does not exist. Any other problem (a folder in
 * its place, no permission) is an error that names the file.
 */
export async function readConfigFile(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    const why =
      code === "EISDIR"
        ? "is a folder, not a file"
        : code === "EACCES" || code === "EPERM"
          ? "cannot be read: permission denied"
          : `cannot be read: ${(error as Error).message}`;
    throw new Error(`${path} ${why}`, { cause: error });
  }
}

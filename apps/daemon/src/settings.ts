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
  let text: string | undefined;
  try {
    text = await readFile(layout.config, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
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
  try {
    const text = await readFile(layout.restrictions, "utf8");
    return parseYaml("restriction-template", text, { source: layout.restrictions }).restrictions;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}

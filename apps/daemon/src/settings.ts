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

/** Tools Claude Code may use without asking in every dispatch: git and the usual test runners. */
export const DEFAULT_ALLOWED_TOOLS = [
  "Bash(git status:*)",
  "Bash(git diff:*)",
  "Bash(git log:*)",
  "Bash(git add:*)",
  "Bash(git commit:*)",
  "Bash(git checkout -b:*)",
  "Bash(git switch -c:*)",
  "Bash(npm test:*)",
  "Bash(npm run test:*)",
  "Bash(pnpm test:*)",
  "Bash(pnpm run test:*)",
  "Bash(yarn test:*)",
  "Bash(bun test:*)",
  "Bash(pytest:*)",
  "Bash(cargo test:*)",
  "Bash(go test:*)",
];

/** Patterns refused in every dispatch, whatever the restriction templates say. */
export const DEFAULT_DISALLOWED_TOOLS = [
  "Bash(git push --force:*)",
  "Bash(git push -f:*)",
  "Bash(rm -rf /:*)",
  "Bash(sudo:*)",
];

/** Claude Code `--disallowedTools` patterns for restriction template rules. */
export function restrictionsToDisallowedTools(restrictions: readonly Restriction[]): string[] {
  return restrictions.flatMap((rule) => {
    if (rule.block === "exec") return [`Bash(${rule.pattern}:*)`];
    if (rule.block === "read") return [`Read(${rule.pattern})`];
    return [`Edit(${rule.pattern})`, `Write(${rule.pattern})`];
  });
}

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

import { readFile, stat } from "node:fs/promises";
import {
  type DispatchSettings,
  type GstackLayout,
  parseYaml,
  resolveDispatchSettings,
} from "@gstack/contracts";

/** The daemon's dispatch settings from `config.yaml` (defaults when the file is absent). */
export async function readDispatchSettings(layout: GstackLayout): Promise<DispatchSettings> {
  let text = "";
  try {
    text = await readFile(layout.config, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const file = parseYaml("daemon-config", text.trim() ? text : "{}", { source: layout.config });
  return resolveDispatchSettings(file, { source: layout.config }).settings;
}

/** A secret from a file that only its owner may read; undefined when the file is absent. */
export async function readSecretFile(path: string): Promise<string | undefined> {
  let mode: number;
  try {
    mode = (await stat(path)).mode;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  if ((mode & 0o077) !== 0) {
    throw new Error(
      `${path} is readable by others (mode ${(mode & 0o777).toString(8)}); run chmod 600 ${path}`,
    );
  }
  const secret = (await readFile(path, "utf8")).trim();
  return secret.length > 0 ? secret : undefined;
}

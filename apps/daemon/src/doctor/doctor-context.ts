import { execFile } from "node:child_process";
import { access, constants } from "node:fs/promises";
import { delimiter, isAbsolute, join } from "node:path";
import type { GstackLayout } from "@gstack/contracts";

/** What the checks read: the state root, the environment and the home folder. */
export interface DoctorContext {
  layout: GstackLayout;
  env: NodeJS.ProcessEnv;
  home: string;
  platform: "darwin" | "linux";
}

/** The program as found on PATH (or the absolute path given, when it can be run). */
export async function findOnPath(program: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const candidates = isAbsolute(program)
    ? [program]
    : (env.PATH ?? "").split(delimiter).map((dir) => join(dir, program));
  for (const candidate of candidates) {
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return undefined;
}

/** Whether the path exists. */
export async function present(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** What the program printed, or undefined when it failed or ran past 30 s. */
export function output(program: string, args: string[], env: NodeJS.ProcessEnv): Promise<string | undefined> {
  return new Promise((done) =>
    execFile(program, args, { env, timeout: 30_000 }, (error, stdout) => done(error ? undefined : stdout)),
  );
}

import { execFile } from "node:child_process";
import { access } from "node:fs/promises";
import type { GstackLayout } from "@gstack/contracts";

/** What the checks read: the state root, the environment and the home folder. */
export interface DoctorContext {
  layout: GstackLayout;
  env: NodeJS.ProcessEnv;
  home: string;
  platform: "darwin" | "linux";
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

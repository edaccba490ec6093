import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, open, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The installed `openclaw` package folder (its `exports` hide package.json from resolution). */
export const openclawPackageDir = fileURLToPath(new URL("../node_modules/openclaw/", import.meta.url));

/** The pinned version of the real OpenClaw this package installs. */
export const openclawVersion: string = (
  JSON.parse(readFileSync(join(openclawPackageDir, "package.json"), "utf8")) as { version: string }
).version;

/** Absolute path of the real `openclaw` entry script (run it with the current Node). */
export function openclawBin(): string {
  return join(openclawPackageDir, "openclaw.mjs");
}

export interface OpenClawRunOptions {
  /** The throw-away home folder (HOME and OPENCLAW_STATE_DIR are set from it). */
  home: string;
  env?: Record<string, string | undefined>;
  cwd?: string;
  timeoutMs?: number;
  /** Another OpenClaw entry script to run (as relabelledOpenClaw returns); default openclawBin(). */
  bin?: string;
}

export interface OpenClawRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real `openclaw` CLI once with an isolated home and no stdin, and collects its
 * output. Output goes through files, not pipes: the CLI exits as soon as it is done, and
 * a pipe would lose whatever was still buffered (a long `--json` answer arrives cut).
 * Never throws for a non-zero exit: callers assert.
 */
export async function runOpenClaw(
  args: readonly string[],
  options: OpenClawRunOptions,
): Promise<OpenClawRun> {
  const folder = await mkdtemp(join(tmpdir(), "openclaw-run-"));
  const stdoutPath = join(folder, "stdout");
  const stderrPath = join(folder, "stderr");
  const stdoutFile = await open(stdoutPath, "w");
  const stderrFile = await open(stderrPath, "w");
  try {
    const { code, signal } = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
      (resolve, reject) => {
        const child = spawn(process.execPath, [options.bin ?? openclawBin(), ...args], {
          cwd: options.cwd ?? options.home,
          env: openclawEnv(options.home, options.env),
          stdio: ["ignore", stdoutFile.fd, stderrFile.fd],
        });
        const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 120_000);
        child.on("error", (error) => {
          clearTimeout(timer);
          reject(error);
        });
        child.on("close", (exitCode, exitSignal) => {
          clearTimeout(timer);
          resolve({ code: exitCode, signal: exitSignal });
        });
      },
    );
    return {
      code,
      signal,
      stdout: await readFile(stdoutPath, "utf8"),
      stderr: await readFile(stderrPath, "utf8"),
    };
  } finally {
    await stdoutFile.close();
    await stderrFile.close();
    await rm(folder, { recursive: true, force: true });
  }
}

/** The environment an isolated OpenClaw runs with: its own home and state, nothing phoned home. */
export function openclawEnv(home: string, extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of Object.keys(env)) {
    // OpenClaw goes quiet under a test runner (VITEST set: `--json` prints nothing), and
    // the caller's own OpenClaw settings must not leak into the throw-away one.
    if (key.startsWith("OPENCLAW_") || key.startsWith("VITEST") || key === "JEST_WORKER_ID") delete env[key];
  }
  if (env.NODE_ENV === "test") delete env.NODE_ENV;
  return {
    ...env,
    HOME: home,
    OPENCLAW_STATE_DIR: join(home, ".openclaw"),
    ...extra,
  };
}

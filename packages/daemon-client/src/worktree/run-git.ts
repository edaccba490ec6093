import { execFile, spawn } from "node:child_process";

/** What one git command said. */
export interface GitOutput {
  ok: boolean;
  code: number;
  stdout: string;
  stderr: string;
}

/** The environment git runs in: the daemon's, without variables that would point it elsewhere. */
function gitEnvironment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const name of ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX"]) {
    delete env[name];
  }
  env.GIT_TERMINAL_PROMPT = "0";
  return env;
}

/**
 * Runs git in `cwd`; never throws for a failing command (see `ok`). `detached` puts git in a
 * process group of its own, for a short step that takes a lock in the person's repository: a
 * kill of the daemon's group then lets it finish and let go of its lock.
 */
export function runGit(
  cwd: string,
  args: readonly string[],
  options: { env?: Record<string, string>; timeoutMs?: number; detached?: boolean } = {},
): Promise<GitOutput> {
  if (options.detached) return runDetached(cwd, args, options);
  return new Promise((resolve) => {
    execFile(
      "git",
      [...args],
      {
        cwd,
        env: gitEnvironment(options.env),
        timeout: options.timeoutMs ?? 120_000,
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        resolve({ ok: !error, code, stdout: String(stdout), stderr: String(stderr || error?.message || "") });
      },
    );
  });
}

/** `runGit` in a process group of its own (execFile does not pass `detached` on to spawn). */
function runDetached(
  cwd: string,
  args: readonly string[],
  options: { env?: Record<string, string>; timeoutMs?: number },
): Promise<GitOutput> {
  return new Promise((resolve) => {
    const child = spawn("git", [...args], {
      cwd,
      env: gitEnvironment(options.env),
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 120_000);
    const finish = (code: number, message = "") => {
      clearTimeout(timer);
      const stderr = Buffer.concat(err).toString() || message;
      resolve({ ok: code === 0, code, stdout: Buffer.concat(out).toString(), stderr });
    };
    child.on("error", (error) => finish(1, error.message));
    child.on("close", (code, signal) => finish(code ?? 1, signal ? `git was stopped by ${signal}` : ""));
  });
}

/** Runs git and returns its trimmed output, or throws with git's own message. */
export async function gitText(cwd: string, args: readonly string[]): Promise<string> {
  const out = await runGit(cwd, args);
  if (!out.ok) throw new Error(`git ${args[0]}: ${firstLine(out.stderr) || `exit ${out.code}`}`);
  return out.stdout.trim();
}

export function firstLine(text: string): string {
  return (
    text
      .split("\n")
      .map((line) => line.trim())
      .find((line) => line.length > 0) ?? ""
  );
}

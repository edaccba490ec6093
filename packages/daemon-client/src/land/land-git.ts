import { spawn } from "node:child_process";
import type { GitOutput } from "../worktree/run-git";

/**
 * Runs git in `cwd` (with `index` as its index file, when given; nothing else in the
 * environment pointing it elsewhere), with `input` on its standard input. `detached` puts git
 * in a process group of its own, for a short step that takes a lock in the person's repository
 * which nothing could later tell from theirs (a ref's, `packed-refs`'): a kill of the daemon's
 * group then lets it finish and let go of its lock, as git does.
 */
export function landGit(
  cwd: string,
  args: string[],
  options: { index?: string; detached?: boolean; input?: string } = {},
): Promise<GitOutput> {
  return landGitBytes(cwd, args, options).then((out) => ({ ...out, stdout: out.stdout.toString() }));
}

/** `landGit` with its standard output as bytes (blob contents). */
export function landGitBytes(
  cwd: string,
  args: string[],
  options: { index?: string; detached?: boolean; input?: string } = {},
): Promise<Omit<GitOutput, "stdout"> & { stdout: Buffer }> {
  const env: NodeJS.ProcessEnv = { ...process.env, GIT_TERMINAL_PROMPT: "0" };
  for (const name of ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX"]) {
    delete env[name];
  }
  if (options.index) env.GIT_INDEX_FILE = options.index;
  return new Promise((done) => {
    const child = spawn("git", args, {
      cwd,
      env,
      stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      detached: options.detached === true,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout?.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr?.on("data", (chunk: Buffer) => err.push(chunk));
    if (options.input !== undefined && child.stdin) {
      // A git that stops reading early (it failed) must not fail the daemon with EPIPE.
      child.stdin.on("error", () => undefined);
      child.stdin.end(options.input);
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), 600_000);
    const finish = (code: number, message = "") => {
      clearTimeout(timer);
      const stderr = Buffer.concat(err).toString() || message;
      done({ ok: code === 0, code, stdout: Buffer.concat(out), stderr });
    };
    child.on("error", (error) => finish(1, error.message));
    child.on("close", (code, signal) => finish(code ?? 1, signal ? `git was stopped by ${signal}` : ""));
  });
}

export function withIndex(cwd: string, index: string, args: string[], input?: string): Promise<GitOutput> {
  return landGit(cwd, args, { index, ...(input === undefined ? {} : { input }) });
}

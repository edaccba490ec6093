import { execFile } from "node:child_process";

/** One call to the service manager (`systemctl`, `launchctl`). */
export interface ServiceStep {
  program: string;
  args: string[];
}

/** What a service manager said when it refused: its own words, on one line. */
export type StepResult = { ok: true } | { ok: false; cause: string };

export function stepText(step: ServiceStep): string {
  return [step.program, ...step.args].join(" ");
}

/** Runs a step and keeps the refusal's real cause (stderr, else the exit) instead of hiding it. */
export function runStep(step: ServiceStep): Promise<StepResult> {
  return new Promise((done) =>
    execFile(step.program, step.args, { timeout: 60_000 }, (error, stdout, stderr) => {
      if (!error) return done({ ok: true });
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return done({ ok: false, cause: `${step.program} is not on PATH` });
      const said = `${stderr}\n${stdout}`
        .split("\n")
        .map((line) => line.trim())
        .filter(Boolean)
        .join("; ");
      done({ ok: false, cause: said || `exited with ${error.code ?? error.signal ?? "an error"}` });
    }),
  );
}

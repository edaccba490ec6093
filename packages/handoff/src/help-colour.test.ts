import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const cli = fileURLToPath(new URL("./cli.ts", import.meta.url));
// The help renderer decides once, when it loads, and leaves colour off by itself under CI, TEST
// (which the test runner sets) or a dumb terminal: the command runs here without them.
const { NO_COLOR: _, FORCE_COLOR: __, TEST: ___, CI: ____, ...rest } = process.env;
const plain = { ...rest, TERM: "xterm-256color" };

function help(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(process.execPath, ["--import", "tsx", cli, ...args], { env }, (error, stdout) =>
      error ? reject(error) : resolve(stdout),
    ),
  );
}

describe("gstack-handoff help", () => {
  it("has no colour codes when written to a pipe, nor with NO_COLOR set to any value", async () => {
    for (const args of [["--help"], ["list", "--help"]]) {
      const piped = await help(args, plain);
      expect(piped).toContain("USAGE gstack-handoff");
      expect(piped).not.toContain("\u001b[");
      expect(await help(args, { ...plain, NO_COLOR: "true" })).not.toContain("\u001b[");
    }
  });
});

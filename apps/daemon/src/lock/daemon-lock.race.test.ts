import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bundledModule, makeWorld, type TestWorld, waitFor } from "../test-support";

let world: TestWorld;
const children: ChildProcess[] = [];

beforeEach(async () => {
  world = await makeWorld();
  await mkdir(world.layout.dispatch.incoming, { recursive: true });
});

afterEach(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  await world.cleanup();
});

/**
 * A real process that takes the daemon lock when it reads "go" on stdin, prints "held" or
 * "refused", and keeps what it took until killed.
 */
function contender(script: string): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, ["--enable-source-maps", script], {
    cwd: join(import.meta.dirname, "..", ".."),
    stdio: ["pipe", "pipe", "pipe"],
  });
  children.push(child);
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  return { child, output: () => output };
}

function writeContenderScript(): string {
  // The daemon's lock lives in @gstack/daemon-client; the contender loads its source, as the daemon's own tests do.
  const lockModule = bundledModule("../../packages/daemon-client/src/daemon-lock.ts");
  const script = join(world.base, "contender.mjs");
  writeFileSync(
    script,
    `import { takeDaemonLock } from ${JSON.stringify(lockModule)};
const layout = ${JSON.stringify({ root: world.root, dispatch: { lock: world.layout.dispatch.lock } })};
console.log("ready");
process.stdin.once("data", async () => {
  try {
    await takeDaemonLock(layout);
    console.log("held");
  } catch (error) {
    console.log("refused: " + error.message);
  }
  setInterval(() => {}, 1000);
});
`,
  );
  return script;
}

const verdict = (output: string) =>
  output.includes("held") ? "held" : output.includes("refused") ? "refused" : undefined;

describe("two daemons starting at the same instant against a stale lock", () => {
  it("never both hold the lock, round after round", async () => {
    const rounds = Number(process.env.LOCK_RACE_ROUNDS ?? 30);
    console.log(`lock race: ${rounds} rounds (LOCK_RACE_ROUNDS to change)`);
    const script = writeContenderScript();
    let doubles = 0;
    for (let round = 0; round < rounds; round += 1) {
      // The holder of the round before is killed with -9 while holding: its lock file stays.
      const [first, second] = [contender(script), contender(script)];
      await waitFor(() =>
        first.output().includes("ready") && second.output().includes("ready") ? true : undefined,
      );
      first.child.stdin?.write("go\n");
      second.child.stdin?.write("go\n");
      const [a, b] = await Promise.all([
        waitFor(() => verdict(first.output())),
        waitFor(() => verdict(second.output())),
      ]);
      if (a === "held" && b === "held") doubles += 1;
      expect([a, b].sort()).toEqual(["held", "refused"]);
      const holder = a === "held" ? first : second;
      const other = a === "held" ? second : first;
      const pid = (JSON.parse(await readFile(world.layout.dispatch.lock, "utf8")) as { pid: number }).pid;
      expect(pid).toBe(holder.child.pid);
      other.child.kill("SIGKILL");
      holder.child.kill("SIGKILL");
      await Promise.all(
        [first.child, second.child].map((child) => new Promise((done) => child.once("exit", done))),
      );
    }
    expect(doubles).toBe(0);
  }, 600_000);
});

import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { makeOpenClawHome } from "./openclaw-home";

it("removes a home that a process still writes into while it is removed", async () => {
  const home = await makeOpenClawHome();
  const folder = join(home.stateDir, "busy");
  // A leftover that keeps making files for a while, as a gateway's worker can after a stop.
  const writer = spawn(
    "sh",
    [
      "-c",
      `mkdir -p '${folder}'; i=0; while [ $i -lt 5000 ]; do : > '${folder}'/f$i 2>/dev/null; i=$((i+1)); done`,
    ],
    { stdio: "ignore" },
  );
  const ended = new Promise((resolve) => writer.once("exit", resolve));
  try {
    // Once it has begun: its folder is there.
    while (!existsSync(folder)) await new Promise((resolve) => setImmediate(resolve));
    await home.remove();
  } finally {
    await ended;
  }
  await home.remove();
  expect(existsSync(home.home)).toBe(false);
});

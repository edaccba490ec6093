import { execFile } from "node:child_process";
import { processAlive } from "@gstack/contracts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function processGroupOf(pid: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    execFile("ps", ["-o", "pgid=", "-p", String(pid)], (error, stdout) => {
      const value = Number.parseInt(stdout.trim(), 10);
      resolve(error || !Number.isFinite(value) ? undefined : value);
    });
  });
}

/**
 * Stops the agent a crashed daemon left running, by the pid and process group its session
 * recorded: only when that pid is alive and still leads the recorded group (a pid reused by
 * another program never does). SIGTERM to the group, up to 3 s, then SIGKILL. Returns the group
 * it stopped, or undefined when there was nothing of this session's to stop.
 */
export async function stopRecordedAgent(recorded: {
  pid?: number;
  pgid?: number;
}): Promise<number | undefined> {
  const pid = recorded.pid;
  if (pid === undefined || pid <= 1 || !processAlive(pid)) return undefined;
  const group = await processGroupOf(pid);
  if (group === undefined || group <= 1 || group !== (recorded.pgid ?? pid)) return undefined;
  try {
    process.kill(-group, "SIGTERM");
  } catch {}
  for (let waited = 0; waited < 3000 && processAlive(pid); waited += 100) await sleep(100);
  try {
    process.kill(-group, "SIGKILL");
  } catch {}
  return group;
}

import { execFile } from "node:child_process";
import { markedRunProcesses } from "@gstack/agent-runner";
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

/**
 * Stops the agent processes of this state root's dispatches `ids` that are still running
 * although no daemon follows them: found by the run marker every agent process inherits
 * together with the `GSTACK_HOME` and `GSTACK_DISPATCH_ID` the daemon gave the run (Linux),
 * so one whose pid was never recorded (the daemon was killed between the spawn and the write)
 * and its descendants in sessions of their own are found too. SIGTERM, up to `graceMs`, then
 * SIGKILL, looking again each round. Returns the pids found, by dispatch id.
 */
export async function stopMarkedAgents(
  root: string,
  ids: ReadonlySet<string>,
  graceMs = 3000,
): Promise<Map<string, number[]>> {
  const find = () =>
    markedRunProcesses({ GSTACK_HOME: root }, ["GSTACK_DISPATCH_ID"]).filter((found) =>
      ids.has(found.values.GSTACK_DISPATCH_ID ?? ""),
    );
  const stopped = new Map<string, number[]>();
  const signal = (found: ReturnType<typeof find>, name: NodeJS.Signals) => {
    for (const { pid, values } of found) {
      const id = values.GSTACK_DISPATCH_ID as string;
      const pids = stopped.get(id) ?? [];
      if (!pids.includes(pid)) pids.push(pid);
      stopped.set(id, pids);
      try {
        process.kill(pid, name);
      } catch {}
    }
  };
  if (ids.size === 0) return stopped;
  let found = find();
  if (found.length === 0) return stopped;
  signal(found, "SIGTERM");
  for (let waited = 0; waited < graceMs; waited += 100) {
    await sleep(100);
    found = find();
    if (found.length === 0) return stopped;
  }
  for (let round = 0; round < 20 && found.length > 0; round += 1) {
    signal(found, "SIGKILL");
    await sleep(100);
    found = find();
  }
  return stopped;
}

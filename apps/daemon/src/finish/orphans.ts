import { execFile } from "node:child_process";
import { markedRunProcesses, processGroupAlive } from "@gstack/agent-runner";
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

/** How long recovery waits for a killed orphan to be gone before it gives up on that dispatch. */
export const CONFIRM_DEAD_MS = 30_000;

/**
 * Stops the agent a crashed daemon left running, by the pid and process group its session
 * recorded: only when that pid is alive and still leads the recorded group (a pid reused by
 * another program never does). SIGTERM to the group, up to 3 s, then SIGKILL, and then waits
 * until no process of the group is alive (a process inside a write can outlive SIGKILL for a
 * moment), up to {@link CONFIRM_DEAD_MS}. Returns the group and whether it is confirmed gone, or
 * undefined when there was nothing of this session's to stop.
 */
export async function stopRecordedAgent(recorded: {
  pid?: number;
  pgid?: number;
}): Promise<{ group: number; gone: boolean } | undefined> {
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
  for (let waited = 0; waited < CONFIRM_DEAD_MS && processGroupAlive(group); waited += 20) await sleep(20);
  return { group, gone: !processGroupAlive(group) };
}

/**
 * Stops the agent processes of this state root's dispatches `ids` that are still running
 * although no daemon follows them: found by the run marker every agent process inherits
 * together with the `GSTACK_HOME` and `GSTACK_DISPATCH_ID` the daemon gave the run (Linux),
 * so one whose pid was never recorded (the daemon was killed between the spawn and the write)
 * and its descendants in sessions of their own are found too. SIGTERM, up to `graceMs`, then
 * SIGKILL, looking again each round until none is found (a process inside a write can outlive
 * SIGKILL for a moment), up to {@link CONFIRM_DEAD_MS}. Returns the pids found, by dispatch id,
 * and the ids of dispatches with a process still alive then, which must not run again yet.
 */
export async function stopMarkedAgents(
  root: string,
  ids: ReadonlySet<string>,
  graceMs = 3000,
): Promise<{ stopped: Map<string, number[]>; alive: Set<string> }> {
  const find = () =>
    markedRunProcesses({ GSTACK_HOME: root }, ["GSTACK_DISPATCH_ID"]).filter((found) =>
      ids.has(found.values.GSTACK_DISPATCH_ID ?? ""),
    );
  const stopped = new Map<string, number[]>();
  // Group leaders first (an agent's supervisor), each with its whole group in one call: a
  // supervisor must get the signal no later than its agent, or, on a busy machine, it can see its
  // agent end first and record that end as the agent's own, and the run would be finished from
  // that record instead of run again.
  const signal = (found: ReturnType<typeof find>, name: NodeJS.Signals) => {
    const leaders = found.filter((process) => process.processGroupId === process.pid);
    const others = found.filter((process) => process.processGroupId !== process.pid);
    for (const { pid, processGroupId, values } of [...leaders, ...others]) {
      const id = values.GSTACK_DISPATCH_ID as string;
      const pids = stopped.get(id) ?? [];
      if (!pids.includes(pid)) pids.push(pid);
      stopped.set(id, pids);
      try {
        process.kill(processGroupId === pid ? -pid : pid, name);
      } catch {}
    }
  };
  const none = new Set<string>();
  if (ids.size === 0) return { stopped, alive: none };
  let found = find();
  if (found.length === 0) return { stopped, alive: none };
  signal(found, "SIGTERM");
  for (let waited = 0; waited < graceMs; waited += 100) {
    await sleep(100);
    found = find();
    if (found.length === 0) return { stopped, alive: none };
  }
  for (let waited = 0; waited < CONFIRM_DEAD_MS && found.length > 0; waited += 50) {
    signal(found, "SIGKILL");
    await sleep(50);
    found = find();
  }
  return { stopped, alive: new Set(found.map((process) => process.values.GSTACK_DISPATCH_ID as string)) };
}

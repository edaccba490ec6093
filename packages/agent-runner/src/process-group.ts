import { readdirSync, readFileSync } from "node:fs";
import { processAlive } from "@gstack/contracts";

/**
 * Process ids still alive (not zombies) in a process group. On Linux this reads /proc, so
 * zombies waiting for a parent that never reaps them do not count; elsewhere it asks the kernel
 * with signal 0, which answers only "some member exists".
 */
export function processGroupMembers(processGroupId: number): number[] {
  // The kernel answers "nobody left" cheaply; only a yes needs the /proc scan to discount zombies.
  if (!signalZero(processGroupId)) return [];
  if (process.platform !== "linux") return [processGroupId];
  const table = processTable();
  if (table === undefined) return [processGroupId];
  return table
    .filter((entry) => entry.processGroupId === processGroupId && entry.live)
    .map((entry) => entry.pid);
}

interface ProcessEntry {
  pid: number;
  parentPid: number;
  processGroupId: number;
  sessionId: number;
  /** Clock ticks since boot at which the process started. */
  startTime: number;
  live: boolean;
}

/** Every process from /proc (Linux), or undefined where /proc cannot be read. */
function processTable(): ProcessEntry[] | undefined {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return undefined;
  }
  const table: ProcessEntry[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue;
    }
    // Fields after the command name (which may hold spaces and parentheses): state, ppid, pgrp,
    // session, ..., starttime (the 22nd field of the whole line, the 20th after the name).
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    table.push({
      pid: Number(entry),
      parentPid: Number(fields[1]),
      processGroupId: Number(fields[2]),
      sessionId: Number(fields[3]),
      startTime: Number(fields[19]),
      live: fields[0] !== "Z" && fields[0] !== "X",
    });
  }
  return table;
}

/**
 * Live descendants of a process (children, grandchildren, …) with their process groups. Agents
 * such as Claude Code run tools in process groups of their own; those are found here, while their
 * parent is still alive to link them.
 */
export function processDescendants(
  pid: number,
): { pid: number; processGroupId: number; startTime: number }[] {
  if (process.platform !== "linux") return [];
  const table = processTable() ?? [];
  const children = new Map<number, ProcessEntry[]>();
  for (const entry of table) {
    const siblings = children.get(entry.parentPid);
    if (siblings) siblings.push(entry);
    else children.set(entry.parentPid, [entry]);
  }
  const found: { pid: number; processGroupId: number; startTime: number }[] = [];
  const queue = [pid];
  const seen = new Set(queue);
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()!) ?? []) {
      if (seen.has(child.pid)) continue;
      seen.add(child.pid);
      queue.push(child.pid);
      if (child.live) {
        found.push({ pid: child.pid, processGroupId: child.processGroupId, startTime: child.startTime });
      }
    }
  }
  return found;
}

/**
 * Clock ticks since boot now (Linux), in the unit of a process's start time in /proc (USER_HZ,
 * 100 on every Linux architecture in use), or undefined. Read before a spawn, it bounds the start
 * time of everything the new process will start.
 */
export function bootTicksNow(): number | undefined {
  if (process.platform !== "linux") return undefined;
  try {
    const seconds = Number(readFileSync("/proc/uptime", "latin1").split(" ")[0]);
    return Number.isFinite(seconds) ? Math.floor(seconds * 100) - 1 : undefined;
  } catch {
    return undefined;
  }
}

function environmentHolds(pid: number, needle: Buffer): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`).includes(needle);
  } catch {
    return false;
  }
}

/** How to recognise what one agent run left behind. */
export interface RunTrace {
  /** The agent's pid, which is also its session id (it was started with setsid). */
  sessionId: number;
  /** An environment variable (`NAME=value`) given only to this run; inherited by what it starts. */
  marker: string;
  /** Clock ticks since boot just before the agent started; only processes started since are read for the marker. */
  startTime?: number;
  /**
   * Descendants seen while the run lived (pid → start time), sampled through the parent links
   * that vanish once a parent exits: catches a child that left the session and dropped the marker.
   */
  seen?: Map<number, number>;
}

/** Adds the run's current descendants to `trace.seen`. */
export function sampleRunDescendants(trace: RunTrace): void {
  if (process.platform !== "linux") return;
  trace.seen ??= new Map();
  for (const descendant of processDescendants(trace.sessionId)) {
    trace.seen.set(descendant.pid, descendant.startTime);
  }
}

/**
 * Live processes a finished agent run left behind (Linux; elsewhere none are found): every
 * process still in the agent's session, whatever its process group and parent (a background
 * job the shell moved to a group of its own, re-parented once the agent exited), and every
 * process started since the agent that carries the run's environment marker, which is how a
 * child that left the session with setsid (a double fork) is still recognised; and every
 * descendant sampled while the run lived (`trace.seen`) that is still the same process.
 */
export function runLeftovers(trace: RunTrace): number[] {
  if (process.platform !== "linux") return [];
  const table = processTable() ?? [];
  const needle = Buffer.from(`${trace.marker}\0`);
  const found: number[] = [];
  for (const entry of table) {
    if (!entry.live || entry.pid === process.pid) continue;
    // The start time tells a sampled process from a later one that reuses its pid.
    if (entry.sessionId === trace.sessionId || trace.seen?.get(entry.pid) === entry.startTime) {
      found.push(entry.pid);
      continue;
    }
    if (trace.startTime !== undefined && entry.startTime < trace.startTime) continue;
    if (environmentHolds(entry.pid, needle)) found.push(entry.pid);
  }
  return found;
}

/**
 * Set to a value unique to each run in the agent's environment. Everything the agent starts
 * inherits it, so what survives the run (even in a session of its own) can be found and stopped.
 */
export const RUN_MARKER_VARIABLE = "GSTACK_AGENT_RUN";

/** A process of an agent run, found by its run marker. */
export interface MarkedProcess {
  pid: number;
  /** Its process group: its own pid when it leads one (a supervisor, or an agent started alone). */
  processGroupId: number;
  /** The values of the variables asked for, from its environment. */
  values: Record<string, string>;
}

/**
 * Live processes (Linux; elsewhere none are found) started by an agent run, which every one of
 * them carries in its environment as `GSTACK_AGENT_RUN`, whose environment also holds each
 * `NAME=value` of `match`. This finds what a run left when the program that started it is gone
 * and never learnt its pid: a caller that gave its runs identifying variables (a state folder, a
 * task id) passes them here. `report` names variables whose values are returned with each
 * process. Only processes whose environment this user may read are seen. Oldest first, by start
 * time (pids wrap); start times count hundredths of a second, so a process and one it started
 * within the same hundredth are in pid order, and a caller that must reach a parent first goes
 * by the group instead (a leader's `processGroupId` is its own pid).
 */
export function markedRunProcesses(
  match: Record<string, string>,
  report: readonly string[] = [],
): MarkedProcess[] {
  if (process.platform !== "linux") return [];
  const wanted = Object.entries(match).map(([name, value]) => `${name}=${value}`);
  const found: (MarkedProcess & { startTime: number })[] = [];
  for (const entry of processTable() ?? []) {
    if (!entry.live || entry.pid === process.pid) continue;
    let environ: string;
    try {
      environ = readFileSync(`/proc/${entry.pid}/environ`, "utf8");
    } catch {
      continue;
    }
    const variables = environ.split("\0");
    if (!variables.some((variable) => variable.startsWith(`${RUN_MARKER_VARIABLE}=`))) continue;
    if (!wanted.every((pair) => variables.includes(pair))) continue;
    const values: Record<string, string> = {};
    for (const name of report) {
      const variable = variables.find((candidate) => candidate.startsWith(`${name}=`));
      if (variable !== undefined) values[name] = variable.slice(name.length + 1);
    }
    found.push({ pid: entry.pid, processGroupId: entry.processGroupId, values, startTime: entry.startTime });
  }
  found.sort((a, b) => a.startTime - b.startTime || a.pid - b.pid);
  return found.map(({ startTime: _, ...process }) => process);
}

/**
 * Ends what a finished run left behind: SIGTERM to each leftover, then SIGKILL to what is
 * still there after the grace period. Looks again after each round, so a leftover that starts
 * another process while being stopped is caught too.
 */
export async function stopRunLeftovers(
  trace: RunTrace,
  options: StopGroupOptions = {},
): Promise<{ signalled: NodeJS.Signals[]; remaining: number[] }> {
  const grace = options.graceMilliseconds ?? 5_000;
  const poll = options.pollMilliseconds ?? 50;
  const signalled: NodeJS.Signals[] = [];
  const signal = (pids: number[], name: NodeJS.Signals) => {
    for (const pid of pids) {
      try {
        process.kill(pid, name);
      } catch {
        // Already gone.
      }
    }
    if (pids.length > 0 && !signalled.includes(name)) signalled.push(name);
  };
  let leftovers = runLeftovers(trace);
  if (leftovers.length === 0) return { signalled, remaining: [] };
  signal(leftovers, "SIGTERM");
  const gone = () => {
    leftovers = runLeftovers(trace);
    return leftovers.length === 0;
  };
  if (await waitUntil(gone, grace, poll)) return { signalled, remaining: [] };
  signal(leftovers, "SIGKILL");
  await waitUntil(
    () => {
      leftovers = runLeftovers(trace);
      signal(leftovers, "SIGKILL");
      return leftovers.length === 0;
    },
    2_000,
    poll,
  );
  return { signalled, remaining: leftovers };
}

function signalZero(processGroupId: number): boolean {
  try {
    process.kill(-processGroupId, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Whether any live process remains in the group. */
export function processGroupAlive(processGroupId: number): boolean {
  return processGroupMembers(processGroupId).length > 0;
}

/** Sends a signal to every process of a group; false when the group is already gone. */
export function signalProcessGroup(processGroupId: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-processGroupId, signal);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return false;
    throw error;
  }
}

export interface StopGroupOptions {
  /** How long to wait after SIGTERM before SIGKILL. Default 5 s. */
  graceMilliseconds?: number;
  /** How often to look whether the group is gone. Default 50 ms. */
  pollMilliseconds?: number;
}

/**
 * Stops a whole process group: SIGTERM, wait until every member is gone or the grace period ends,
 * then SIGKILL and wait again. Descendants the leader moved into process groups of their own
 * (found before any signal, while the leader still links them) are stopped the same way, so a
 * tool the agent started in its own group is not left behind. Resolves with what it had to send
 * and any process that survived.
 */
export async function stopProcessGroup(
  processGroupId: number,
  options: StopGroupOptions = {},
): Promise<{ signalled: NodeJS.Signals[]; remaining: number[] }> {
  const grace = options.graceMilliseconds ?? 5_000;
  const poll = options.pollMilliseconds ?? 50;
  const signalled: NodeJS.Signals[] = [];
  // Descendants are linked through their parent; once the leader is gone there is nothing to walk.
  const descendants = processAlive(processGroupId) ? processDescendants(processGroupId) : [];
  const descendantIds = new Set(descendants.map((descendant) => descendant.pid));
  // Only groups led by the agent or one of its descendants: never a group the agent merely joined.
  const groups = [
    processGroupId,
    ...new Set(
      descendants
        .map((descendant) => descendant.processGroupId)
        .filter((group) => group !== processGroupId && descendantIds.has(group)),
    ),
  ];
  const stray = descendants
    .filter((descendant) => !groups.includes(descendant.processGroupId))
    .map((descendant) => descendant.pid);
  const remaining = () => [
    ...new Set([
      ...groups.flatMap((group) => processGroupMembers(group)),
      ...stray.filter((pid) => processAlive(pid)),
    ]),
  ];
  const signalAll = (signal: NodeJS.Signals) => {
    let any = false;
    for (const group of groups) any = signalProcessGroup(group, signal) || any;
    for (const pid of stray) {
      try {
        process.kill(pid, signal);
        any = true;
      } catch {
        // Already gone.
      }
    }
    return any;
  };
  if (remaining().length === 0) return { signalled, remaining: [] };
  if (signalAll("SIGTERM")) signalled.push("SIGTERM");
  if (await waitUntil(() => remaining().length === 0, grace, poll)) return { signalled, remaining: [] };
  if (signalAll("SIGKILL")) signalled.push("SIGKILL");
  await waitUntil(() => remaining().length === 0, 2_000, poll);
  return { signalled, remaining: remaining() };
}

async function waitUntil(condition: () => boolean, timeout: number, poll: number): Promise<boolean> {
  const deadline = Date.now() + timeout;
  while (!condition()) {
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, poll));
  }
  return true;
}

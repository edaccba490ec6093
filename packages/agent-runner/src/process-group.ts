import { readdirSync, readFileSync } from "node:fs";

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
    // Fields after the command name (which may hold spaces and parentheses): state, ppid, pgrp.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    table.push({
      pid: Number(entry),
      parentPid: Number(fields[1]),
      processGroupId: Number(fields[2]),
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
export function processDescendants(pid: number): { pid: number; processGroupId: number }[] {
  if (process.platform !== "linux") return [];
  const table = processTable() ?? [];
  const children = new Map<number, ProcessEntry[]>();
  for (const entry of table) {
    const siblings = children.get(entry.parentPid);
    if (siblings) siblings.push(entry);
    else children.set(entry.parentPid, [entry]);
  }
  const found: { pid: number; processGroupId: number }[] = [];
  const queue = [pid];
  const seen = new Set(queue);
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()!) ?? []) {
      if (seen.has(child.pid)) continue;
      seen.add(child.pid);
      queue.push(child.pid);
      if (child.live) found.push({ pid: child.pid, processGroupId: child.processGroupId });
    }
  }
  return found;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  if (process.platform !== "linux") return true;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
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

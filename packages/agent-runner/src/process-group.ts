import { readdirSync, readFileSync } from "node:fs";

/**
 * Process ids still alive (not zombies) in a process group. On Linux this reads /proc, so
 * zombies waiting for a parent that never reaps them do not count; elsewhere it asks the kernel
 * with signal 0, which answers only "some member exists".
 */
export function processGroupMembers(processGroupId: number): number[] {
  // The kernel answers "nobody left" cheaply; only a yes needs the /proc scan to discount zombies.
  if (!signalZero(processGroupId)) return [];
  if (process.platform === "linux") {
    const members: number[] = [];
    let entries: string[];
    try {
      entries = readdirSync("/proc");
    } catch {
      return signalZero(processGroupId) ? [processGroupId] : [];
    }
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
      if (Number(fields[2]) === processGroupId && fields[0] !== "Z" && fields[0] !== "X")
        members.push(Number(entry));
    }
    return members;
  }
  return signalZero(processGroupId) ? [processGroupId] : [];
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
 * then SIGKILL and wait again. Resolves with what it had to send.
 */
export async function stopProcessGroup(
  processGroupId: number,
  options: StopGroupOptions = {},
): Promise<{ signalled: NodeJS.Signals[]; remaining: number[] }> {
  const grace = options.graceMilliseconds ?? 5_000;
  const poll = options.pollMilliseconds ?? 50;
  const signalled: NodeJS.Signals[] = [];
  if (!processGroupAlive(processGroupId)) return { signalled, remaining: [] };
  if (signalProcessGroup(processGroupId, "SIGTERM")) signalled.push("SIGTERM");
  if (await waitUntilGone(processGroupId, grace, poll)) return { signalled, remaining: [] };
  if (signalProcessGroup(processGroupId, "SIGKILL")) signalled.push("SIGKILL");
  await waitUntilGone(processGroupId, 2_000, poll);
  return { signalled, remaining: processGroupMembers(processGroupId) };
}

async function waitUntilGone(processGroupId: number, timeout: number, poll: number): Promise<boolean> {
  const deadline = Date.now() + timeout;
  while (processGroupAlive(processGroupId)) {
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, poll));
  }
  return true;
}

import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { waitUntil } from "../../../vitest.load-budget";
import {
  markedRunProcesses,
  processDescendants,
  processGroupAlive,
  processGroupMembers,
  stopProcessGroup,
} from "./process-group";

function startGroup(script: string) {
  const child = spawn("sh", ["-c", script], { detached: true, stdio: "ignore" });
  return child.pid!;
}

async function waitForMembers(processGroupId: number, count: number) {
  await waitUntil(() => (processGroupMembers(processGroupId).length >= count ? true : undefined), {
    idleMs: 10_000,
    what: `${count} processes in group ${processGroupId}`,
    lastSeen: () => `${processGroupMembers(processGroupId).length} processes`,
  });
}

describe("stopProcessGroup", () => {
  it("ends every process of the group with SIGTERM when they obey", async () => {
    const group = startGroup("sleep 60 & sleep 60 & wait");
    await waitForMembers(group, 3);
    const outcome = await stopProcessGroup(group, { graceMilliseconds: 5_000 });
    expect(outcome).toEqual({ signalled: ["SIGTERM"], remaining: [] });
    expect(processGroupAlive(group)).toBe(false);
  });

  it("escalates to SIGKILL for a process that ignores SIGTERM", async () => {
    const group = startGroup("trap '' TERM; sleep 60 & trap '' TERM; while true; do sleep 1; done");
    await waitForMembers(group, 2);
    const outcome = await stopProcessGroup(group, { graceMilliseconds: 300 });
    expect(outcome.signalled).toEqual(["SIGTERM", "SIGKILL"]);
    expect(outcome.remaining).toEqual([]);
    expect(processGroupAlive(group)).toBe(false);
  });

  it("does nothing for a group that is already gone", async () => {
    const group = startGroup("exit 0");
    await waitUntil(() => (processGroupAlive(group) ? undefined : true), {
      idleMs: 5_000,
      what: `group ${group} gone`,
    });
    expect(await stopProcessGroup(group)).toEqual({ signalled: [], remaining: [] });
  });

  it("also stops descendants the leader moved into process groups of their own", async () => {
    const group = startGroup("setsid sleep 301 & trap '' TERM; while true; do sleep 1; done");
    const detached = await waitUntil(
      () => processDescendants(group).find((descendant) => descendant.processGroupId !== group),
      { idleMs: 10_000, what: `a descendant of group ${group} in a group of its own` },
    );
    expect(processGroupAlive(detached.processGroupId)).toBe(true);
    const outcome = await stopProcessGroup(group, { graceMilliseconds: 300 });
    expect(outcome.remaining).toEqual([]);
    expect(processGroupAlive(group)).toBe(false);
    expect(processGroupAlive(detached.processGroupId)).toBe(false);
  });
});

describe.runIf(process.platform === "linux")("markedRunProcesses", () => {
  it("finds run processes by the variables their starter gave them, and nothing else", async () => {
    const base = { ...process.env, GSTACK_HOME: `/tmp/marked-${process.pid}` };
    const start = (env: NodeJS.ProcessEnv) =>
      spawn("sleep", ["60"], { detached: true, stdio: "ignore", env: env as Record<string, string> });
    const ours = start({ ...base, GSTACK_AGENT_RUN: "run-1", GSTACK_DISPATCH_ID: "dispatch-ours" });
    const unmarked = start({ ...base, GSTACK_DISPATCH_ID: "dispatch-ours" });
    const elsewhere = start({
      ...base,
      GSTACK_HOME: `/tmp/marked-other-${process.pid}`,
      GSTACK_AGENT_RUN: "run-2",
      GSTACK_DISPATCH_ID: "dispatch-ours",
    });
    try {
      const found = await waitUntil(
        () => {
          const marked = markedRunProcesses({ GSTACK_HOME: base.GSTACK_HOME }, [
            "GSTACK_DISPATCH_ID",
            "MISSING",
          ]);
          return marked.length > 0 ? marked : undefined;
        },
        { idleMs: 5_000, what: "a marked run process" },
      );
      expect(found).toEqual([
        { pid: ours.pid, processGroupId: ours.pid, values: { GSTACK_DISPATCH_ID: "dispatch-ours" } },
      ]);
      expect(
        markedRunProcesses({ GSTACK_HOME: base.GSTACK_HOME, GSTACK_DISPATCH_ID: "dispatch-other" }),
      ).toEqual([]);
    } finally {
      for (const child of [ours, unmarked, elsewhere]) child.kill("SIGKILL");
    }
  });

  it("lists a process before what it started, with the group each is in", async () => {
    const env = { ...process.env, GSTACK_HOME: `/tmp/marked-tree-${process.pid}`, GSTACK_AGENT_RUN: "run-3" };
    // A leader that starts a child in its own group, as a supervisor starts its agent.
    // The child starts a moment later: start times are counted in hundredths of a second.
    const leader = spawn("sh", ["-c", "sleep 0.1; sleep 60 & wait"], {
      detached: true,
      stdio: ["ignore", "pipe", "ignore"],
      env: env as Record<string, string>,
    });
    try {
      const found = await waitUntil(
        () => {
          const marked = markedRunProcesses({ GSTACK_HOME: env.GSTACK_HOME });
          return marked.length === 2 ? marked : undefined;
        },
        { idleMs: 5_000, what: "the leader and its child" },
      );
      expect(found[0]).toMatchObject({ pid: leader.pid, processGroupId: leader.pid });
      expect(found[1]?.pid).not.toBe(leader.pid);
      expect(found[1]?.processGroupId).toBe(leader.pid);
    } finally {
      process.kill(-(leader.pid as number), "SIGKILL");
    }
  });
});

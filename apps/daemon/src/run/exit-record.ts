import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { adapterFor, readSupervisedExit, recordedRunResult } from "@gstack/agent-runner";
import { type AgentCommand, type GstackLayout, writeFileAtomic } from "@gstack/contracts";
import type { ExitRecord } from "@gstack/daemon-client";
import { resultOf } from "./runner-agent";

export type { ExitRecord } from "@gstack/daemon-client";

export function exitRecordPath(layout: GstackLayout, id: string, attempt: number): string {
  return join(layout.dispatch.sessionDir(id), `exit-${attempt}.json`);
}

export async function writeExitRecord(layout: GstackLayout, id: string, record: ExitRecord): Promise<void> {
  await writeFileAtomic(exitRecordPath(layout, id, record.attempt), `${JSON.stringify(record)}\n`, {
    mode: 0o600,
  });
}

/** The record of start `attempt` (a `spawnNumber`), or undefined when there is none (or it cannot be read). */
export async function readExitRecord(
  layout: GstackLayout,
  id: string,
  attempt: number,
): Promise<ExitRecord | undefined> {
  try {
    const record = JSON.parse(await readFile(exitRecordPath(layout, id, attempt), "utf8")) as ExitRecord;
    return record.attempt === attempt && typeof record.result === "object" ? record : undefined;
  } catch {
    return undefined;
  }
}

/** Where the supervisor of start `attempt` records how its agent ended. */
export function supervisedExitPath(layout: GstackLayout, id: string, attempt: number): string {
  return join(layout.dispatch.sessionDir(id), `agent-exit-${attempt}.json`);
}

/**
 * How start `attempt` ended by the record its supervisor wrote, the result rebuilt from the
 * output it kept (`stream-{n}.jsonl`); undefined when there is no record, or when the supervisor
 * was itself stopped (the agent was cancelled or stopped as an orphan: it did not finish).
 */
export function readSupervisedExitRecord(
  layout: GstackLayout,
  id: string,
  agent: string,
  attempt: number,
  startedAt: string,
  command?: AgentCommand,
): ExitRecord | undefined {
  const exit = readSupervisedExit(supervisedExitPath(layout, id, attempt));
  if (exit === undefined || exit.stopped !== undefined) return undefined;
  try {
    const run = recordedRunResult({
      agent,
      ...(command ? { command } : {}),
      streamFile: join(layout.dispatch.sessionDir(id), `stream-${attempt}.jsonl`),
      exit,
      startedAt,
    });
    // An ACP agent talks to the daemon over its stdin: one that ended with no answer to its
    // prompt lost its client when the daemon died, so it was interrupted, not finished.
    if (adapterFor(agent, command).protocol === "acp" && run.result === undefined) return undefined;
    return { attempt, result: resultOf(run) };
  } catch {
    return undefined;
  }
}

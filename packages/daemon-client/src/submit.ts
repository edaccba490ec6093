import { randomBytes } from "node:crypto";
import { rename } from "node:fs/promises";
import { join } from "node:path";
import {
  type Dispatch,
  type GstackLayout,
  parseValue,
  signDocument,
  writeFileAtomic,
} from "@gstack/contracts";
import { exists } from "./exists";
import { readState } from "./session-state";

/**
 * Hands a dispatch to the daemon the safe way: validated, signed when a secret is given,
 * written completely under `dispatch/tmp/`, then renamed into `dispatch/` so the daemon
 * never sees half a file. Returns the path the daemon will pick up.
 */
export async function submitDispatch(
  layout: GstackLayout,
  document: Record<string, unknown>,
  options: { secret?: string } = {},
): Promise<{ path: string; dispatch: Dispatch }> {
  const unsigned: Record<string, unknown> = { ...document };
  delete unsigned.source_signature;
  if (unsigned.created_at === undefined) unsigned.created_at = new Date().toISOString();
  const signed = options.secret
    ? { ...unsigned, source_signature: signDocument(unsigned, options.secret) }
    : unsigned;
  const dispatch = parseValue("dispatch", signed, { source: String(document.id ?? "dispatch") });
  const temporary = join(layout.dispatch.tmp, `${dispatch.id}.${randomBytes(4).toString("hex")}.json`);
  await writeFileAtomic(temporary, `${JSON.stringify(signed, null, 2)}\n`, { mode: 0o600 });
  const path = join(layout.dispatch.incoming, `${dispatch.id}.json`);
  await rename(temporary, path);
  return { path, dispatch };
}

/** Asks a running daemon to cancel a dispatch by dropping a control file it watches. */
export async function requestCancel(
  layout: GstackLayout,
  id: string,
  reason = "cancelled from the command line",
): Promise<string> {
  const path = join(layout.dispatch.control, `${id}.cancel`);
  const temporary = join(layout.dispatch.tmp, `${id}.cancel.${randomBytes(4).toString("hex")}`);
  await writeFileAtomic(temporary, `${JSON.stringify({ reason, ts: new Date().toISOString() })}\n`);
  await rename(temporary, path);
  return path;
}

/**
 * Where a dispatch is as seen from disk: `waiting` in `dispatch/` or claimed, `active` with
 * an unfinished session, `finished` with a completion, or undefined when nothing knows it.
 */
export async function dispatchPhase(
  layout: GstackLayout,
  id: string,
): Promise<"waiting" | "active" | "finished" | undefined> {
  if (await exists(layout.dispatch.completedJson(id))) return "finished";
  const state = await readState(layout, id);
  if (state) return state.status === "finished" ? "finished" : "active";
  return (await waitingOnDisk(layout, id)) ? "waiting" : undefined;
}

/** True when a dispatch waits in `dispatch/` or in `claimed/` to be taken. */
export async function waitingOnDisk(layout: GstackLayout, id: string): Promise<boolean> {
  return (
    (await exists(join(layout.dispatch.incoming, `${id}.json`))) ||
    (await exists(layout.dispatch.claimedFile(id)))
  );
}

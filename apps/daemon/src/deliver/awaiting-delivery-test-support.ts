import { mkdir } from "node:fs/promises";
import {
  type AwaitingNotice,
  CALLBACK_SIGNATURE_HEADER,
  CALLBACK_TIMESTAMP_HEADER,
  checkValue,
  type GstackLayout,
  verifyCallback,
} from "@gstack/contracts";
import { type SessionState, writeState } from "@gstack/daemon-client";
import { writeAwaitingNotice } from "../await/awaiting";
import { CALLBACK_SECRET, type ReceivedRequest } from "./delivery-test-support";

/** A notice as the daemon writes it for round `round` of a plan. */
export function planNotice(id: string, round = 1): AwaitingNotice {
  return {
    dispatch_id: id,
    status: "awaiting",
    project: "acme-widget",
    kind: "plan",
    since: "2026-11-23T10:00:00.000Z",
    expires_at: "2099-11-26T10:00:00.000Z",
    round,
    summary: `## Plan (round ${round})\n1. Add plan.txt.`,
    how_to_answer: `gstack-dispatch answer ${id} approve | revise "<what to change>" | reject "<why>"`,
    reply_to: { runtime: "openclaw", session_key: "agent:main:main" },
  };
}

/** The session state and notice of a dispatch that waits on `notice`'s round. */
export async function recordWait(
  world: { layout: GstackLayout },
  notice: AwaitingNotice,
  change: Partial<SessionState> = {},
): Promise<void> {
  await mkdir(world.layout.dispatch.sessionDir(notice.dispatch_id), { recursive: true });
  await writeState(world.layout, {
    id: notice.dispatch_id,
    project: "acme-widget",
    project_dir: "/tmp/acme",
    agent: "claude",
    status: "awaiting",
    claimed_file: "",
    first_seen: notice.since,
    updated_at: notice.since,
    attempts: 1,
    awaiting: {
      kind: notice.kind,
      since: notice.since,
      expires_at: notice.expires_at,
      round: notice.round,
      summary: notice.summary,
      how_to_answer: notice.how_to_answer,
    },
    ...change,
  } as SessionState);
  await writeAwaitingNotice(world.layout, notice);
}

/** A signed waiting notice a receiver got, checked as the plugin's route checks it. */
export function verifiedNotice(request: ReceivedRequest, secret = CALLBACK_SECRET): AwaitingNotice {
  const header = (name: string) => {
    const value = request.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const check = verifyCallback({
    body: request.body,
    timestamp: header(CALLBACK_TIMESTAMP_HEADER),
    signature: header(CALLBACK_SIGNATURE_HEADER),
    secret,
  });
  if (!check.ok) throw new Error(`signature refused: ${check.message}`);
  const body = checkValue("awaiting-callback", JSON.parse(request.body), { source: "test" });
  if (!body.ok) throw new Error(`not an awaiting-callback: ${body.error.message}`);
  if (body.value.notice.dispatch_id !== body.value.dispatch_id)
    throw new Error("the notice names another dispatch");
  return body.value.notice;
}

import type { Dispatch } from "@gstack/contracts";

/** When a dispatch expires: created_at (else first seen) plus ttl_seconds; undefined without a ttl. */
export function expiresAt(dispatch: Dispatch, firstSeen: Date): Date | undefined {
  if (dispatch.ttl_seconds === undefined) return undefined;
  const anchor = dispatch.created_at ? new Date(dispatch.created_at) : firstSeen;
  return new Date(anchor.getTime() + dispatch.ttl_seconds * 1000);
}

import type { ReviewSettings } from "../plugin-settings";
import { REVIEW_PATH } from "../plugin-settings";
import { type Capability, loadReviewKey, signCapability } from "./capability";

/** The gateway's port as the running gateway set it, else OpenClaw's default. */
export function gatewayPort(env: NodeJS.ProcessEnv = process.env, configured?: unknown): number {
  const fromEnv = Number(env.OPENCLAW_GATEWAY_PORT);
  if (Number.isInteger(fromEnv) && fromEnv > 0) return fromEnv;
  if (typeof configured === "number" && Number.isInteger(configured) && configured > 0) return configured;
  return 18789;
}

/** The review page's link for a dispatch of this host, or undefined when there is none to give. */
export type ReviewLinkOf = (dispatchId: string) => Promise<string | undefined>;

export interface ReviewLinks {
  /** The page of one dispatch, opened by a capability for it alone. */
  dispatch(id: string, now?: Date): Promise<string>;
  /** This host's list of dispatches. */
  list(now?: Date): Promise<string>;
  key(): Promise<Buffer>;
}

/**
 * Links to the review pages, on `baseUrl`: where the person reaches the gateway (see
 * public-base.ts), or the gateway's own loopback address for a link used on its machine.
 */
export function reviewLinks(settings: ReviewSettings, baseUrl: () => string | Promise<string>): ReviewLinks {
  let key: Promise<Buffer> | undefined;
  const loadKey = () => {
    key ??= loadReviewKey(settings.keyFile);
    // A key that could not be read is tried again next time (the person may fix its mode).
    key.catch(() => {
      key = undefined;
    });
    return key;
  };
  const link = async (path: string, capability: Capability) =>
    `${await baseUrl()}${path}?c=${signCapability(await loadKey(), capability)}`;
  const expiry = (now: Date) => Math.floor(now.getTime() / 1000 + settings.ttlHours * 3600);
  return {
    dispatch: (id, now = new Date()) =>
      link(`${REVIEW_PATH}/d`, { dispatchId: id, expires: expiry(now), scope: "dispatch" }),
    list: (now = new Date()) => link(REVIEW_PATH, { dispatchId: "*", expires: expiry(now), scope: "list" }),
    key: loadKey,
  };
}

import type { DispatchSettings } from "@gstack/contracts";
import type { EndpointCheck } from "@gstack/daemon-client";

/** The kinds of receiver a completion can go to; each gets its own body and credentials. */
export type ReceiverKind = EndpointCheck["kind"];

/** A configured endpoint: where its deliveries go and whose credentials they carry. */
export interface ConfiguredEndpoint {
  kind: ReceiverKind;
  url: string;
}

/** The endpoints named in the settings, in the order they are checked and delivered to. */
export function configuredEndpoints(settings: DispatchSettings): ConfiguredEndpoint[] {
  const endpoints: ConfiguredEndpoint[] = [];
  if (settings.clawvisor_url) endpoints.push({ kind: "clawvisor", url: settings.clawvisor_url });
  if (settings.openclaw_hooks_url)
    endpoints.push({ kind: "openclaw-hooks", url: settings.openclaw_hooks_url });
  if (settings.openclaw_callback_url) {
    endpoints.push({ kind: "gstack-receiver", url: settings.openclaw_callback_url });
  }
  return endpoints;
}

function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  return host === "localhost" || host === "::1" || /^127(?:\.[0-9]{1,3}){3}$/.test(host);
}

/**
 * Why credentials must not be sent to `url`, or undefined when they may: only https, or
 * plain http to a loopback address, where nobody on the network can read the token.
 */
export function credentialTransportProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `${url} is not a URL`;
  }
  if (parsed.username || parsed.password) return `${url} carries a user name or password`;
  if (parsed.protocol === "https:") return undefined;
  if (parsed.protocol === "http:" && isLoopbackHost(parsed.hostname)) return undefined;
  if (parsed.protocol === "http:") {
    return `${parsed.origin} is plain http to a host that is not loopback; credentials go only over https or to 127.0.0.1/::1/localhost`;
  }
  return `${url} is not an http(s) URL`;
}

/**
 * Whether a dispatch's `callback_url` may be used: it gets the Clawvisor bearer token, so it
 * must be on the configured `clawvisor_url`'s origin (scheme, host and port), over a
 * transport that keeps the token private. Without a Clawvisor endpoint the URL is never used,
 * so it is accepted (and ignored).
 */
export function checkCallbackUrl(
  settings: DispatchSettings,
  url: string,
): { ok: true } | { ok: false; reason: string } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, reason: `callback_url ${JSON.stringify(url)} is not a URL` };
  }
  if (!settings.clawvisor_url) return { ok: true };
  const allowed = new URL(settings.clawvisor_url);
  if (parsed.origin !== allowed.origin) {
    return {
      ok: false,
      reason: `callback_url ${parsed.origin} is not the configured Clawvisor origin ${allowed.origin}; the callback token goes only there`,
    };
  }
  const problem = credentialTransportProblem(url);
  return problem ? { ok: false, reason: `callback_url: ${problem}` } : { ok: true };
}

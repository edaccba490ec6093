import { execFile } from "node:child_process";
import { networkInterfaces } from "node:os";
import { promisify } from "node:util";
import { resolveGatewayPublicOrigin } from "openclaw/plugin-sdk/config-contracts";
import { gatewayPort } from "./links";

const run = promisify(execFile);

/** Where the person reaches the gateway, and what said so; or why that cannot be told. */
export type PublicBase =
  | { url: string; from: string; why?: undefined; local?: undefined }
  | { url?: undefined; from?: undefined; why: string; local: string };

/** The gateway's part of OpenClaw's config, as far as where it listens goes. */
interface GatewayConfig {
  port?: unknown;
  bind?: unknown;
  customBindHost?: unknown;
  tls?: { enabled?: unknown };
  tailscale?: { mode?: unknown };
}

export interface PublicBaseProbes {
  env?: NodeJS.ProcessEnv;
  /** This machine's IPv4 addresses that are not loopback, by interface (default: the system's). */
  addresses?: () => { name: string; address: string }[];
  /** The tailnet name of this machine (`tailscale status --json`, Self.DNSName), or undefined. */
  tailnetName?: () => Promise<string | undefined>;
}

/** How to say which address messages should link to, for a person to read where none is known. */
export const HOW_TO_SET_BASE =
  "set gateway.publicOrigin (an https address that reaches this gateway), or the plugin's review.publicBaseUrl (openclaw config set plugins.entries.gstack.config.review.publicBaseUrl https://…), or expose the gateway with gateway.tailscale.mode serve";

const isLoopback = (host: string) => /^(127\.|localhost$|\[?::1\]?$)/.test(host);

/**
 * The base URL of the review page as the person reaches it, in this order: the plugin's own
 * `review.publicBaseUrl`; OpenClaw's `gateway.publicOrigin` (read by OpenClaw's own rule; an
 * http one is loopback only); Tailscale Serve or Funnel (`https://<this machine's tailnet
 * name>`, the route OpenClaw makes at `/` on port 443); a bind to one address that is not
 * loopback (`custom`), the tailnet address (`tailnet`) or, for `lan`, this machine's one LAN
 * address. A gateway on loopback alone (the default, and `auto`) has none: no link is given.
 */
export async function publicBase(
  config: { gateway?: GatewayConfig } | undefined,
  publicBaseUrl: string | undefined,
  probes: PublicBaseProbes = {},
): Promise<PublicBase> {
  const gateway = config?.gateway ?? {};
  const env = probes.env ?? process.env;
  const port = gatewayPort(env, gateway.port);
  const local = `http://127.0.0.1:${port}`;
  if (publicBaseUrl) return { url: publicBaseUrl, from: "review.publicBaseUrl" };

  const origin = resolveGatewayPublicOrigin(config as Parameters<typeof resolveGatewayPublicOrigin>[0]);
  if (origin && !isLoopback(new URL(origin).hostname)) return { url: origin, from: "gateway.publicOrigin" };

  const tailscale = gateway.tailscale?.mode;
  if (tailscale === "serve" || tailscale === "funnel") {
    const name = await (probes.tailnetName ?? tailnetName)();
    if (name) return { url: `https://${name}`, from: `gateway.tailscale.mode ${tailscale}` };
    return {
      why: `gateway.tailscale.mode is ${tailscale}, but this machine's tailnet name could not be read (tailscale status --json)`,
      local,
    };
  }

  const scheme = gateway.tls?.enabled === true ? "https" : "http";
  const bind = typeof gateway.bind === "string" ? gateway.bind : "loopback";
  const addresses = (probes.addresses ?? ipv4Addresses)();
  if (bind === "custom") {
    const host = typeof gateway.customBindHost === "string" ? gateway.customBindHost.trim() : "";
    if (host && !isLoopback(host) && host !== "0.0.0.0")
      return { url: `${scheme}://${host}:${port}`, from: `gateway.bind custom (${host})` };
  }
  if (bind === "tailnet") {
    const tailnet = addresses.find((entry) => inTailnetRange(entry.address));
    if (tailnet) return { url: `${scheme}://${tailnet.address}:${port}`, from: "gateway.bind tailnet" };
    return {
      why: "gateway.bind is tailnet, but this machine has no tailnet address (it listens on loopback)",
      local,
    };
  }
  if (bind === "lan" || (bind === "custom" && gateway.customBindHost === "0.0.0.0")) {
    const lan = addresses.filter((entry) => !/^(docker|br-|veth|virbr|cni|flannel)/.test(entry.name));
    if (lan.length === 1 && lan[0])
      return { url: `${scheme}://${lan[0].address}:${port}`, from: `gateway.bind ${bind} (${lan[0].name})` };
    return {
      why:
        lan.length === 0
          ? `gateway.bind is ${bind}, but this machine has no LAN address`
          : `gateway.bind is ${bind} and this machine has ${lan.length} LAN addresses (${lan.map((entry) => entry.address).join(", ")}); which one the person reaches cannot be told`,
      local,
    };
  }
  return { why: `the gateway listens on loopback only (gateway.bind ${bind})`, local };
}

/** 100.64.0.0/10, the addresses Tailscale gives. */
function inTailnetRange(address: string): boolean {
  const [first, second] = address.split(".").map(Number);
  return first === 100 && second !== undefined && second >= 64 && second < 128;
}

function ipv4Addresses(): { name: string; address: string }[] {
  const found: { name: string; address: string }[] = [];
  for (const [name, entries] of Object.entries(networkInterfaces())) {
    for (const entry of entries ?? [])
      if (entry.family === "IPv4" && !entry.internal) found.push({ name, address: entry.address });
  }
  return found;
}

let tailnetCache: { at: number; name: Promise<string | undefined> } | undefined;

/** This machine's tailnet DNS name, asked of the tailscale command (kept for a minute). */
function tailnetName(): Promise<string | undefined> {
  const now = Date.now();
  if (!tailnetCache || now - tailnetCache.at > 60_000) {
    tailnetCache = {
      at: now,
      name: run("tailscale", ["status", "--json"], { timeout: 5_000, maxBuffer: 4 * 1024 * 1024 })
        .then(({ stdout }) => {
          const self = (JSON.parse(stdout) as { Self?: { DNSName?: unknown } }).Self;
          return typeof self?.DNSName === "string" && self.DNSName
            ? self.DNSName.replace(/\.$/, "")
            : undefined;
        })
        .catch(() => undefined),
    };
  }
  return tailnetCache.name;
}

import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeOpenClawHome, type OpenClawHome, runOpenClaw } from "@gstack/openclaw-testbed";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadBudget } from "../../../vitest.load-budget";
import { installPlugin, packPlugin } from "./openclaw-world";

// The links' address from OpenClaw's own gateway configuration: written with `openclaw config
// set` (OpenClaw's schema judges each value) and read back by the installed plugin in
// `openclaw gstack-review`, as a person runs it.
//
// Each `openclaw` run loads OpenClaw's whole module graph (seconds of CPU), so the cases share one
// home and build on one another instead of taking each setting out again: loopback alone, then
// Tailscale Serve, then a bind to one address (written with Serve turned off), then
// gateway.publicOrigin over that bind, which the plugin must prefer to it. Several values set
// together go in one `config set --batch-json`, which OpenClaw checks against its schema as it
// does a single value.

let scratch: string;
let home: OpenClawHome;

const openclaw = (args: string[], env: Record<string, string> = {}) =>
  runOpenClaw(args, { home: home.home, env, timeoutMs: loadBudget(120_000) });

async function configSet(path: string, value: string) {
  const set = await openclaw(["config", "set", path, value]);
  expect(set.code, `${set.stdout}\n${set.stderr}`).toBe(0);
}

/** Several values in one `openclaw config set` (its batch mode, each value checked the same way). */
async function configSetAll(values: Record<string, unknown>) {
  const batch = Object.entries(values).map(([path, value]) => ({ path, value }));
  const set = await openclaw(["config", "set", "--batch-json", JSON.stringify(batch)]);
  expect(set.code, `${set.stdout}\n${set.stderr}`).toBe(0);
}

async function printed(env: Record<string, string> = {}): Promise<string> {
  const run = await openclaw(["gstack-review"], env);
  expect(run.code, run.stderr).toBe(0);
  return run.stdout;
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "gstack-link-base-"));
  const tarball = await packPlugin(join(scratch, "pack"));
  home = await makeOpenClawHome({
    plugins: { entries: { gstack: { enabled: true, config: { gstackHome: join(scratch, "gstack") } } } },
  });
  await installPlugin(home, tarball);
});

afterAll(async () => {
  await home?.remove();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe("the review link's address, from the gateway's configuration", {
  timeout: loadBudget(600_000),
}, () => {
  // In order: each case adds to the configuration the one before left.
  it("loopback alone: a link for this machine, and how to give the phone one", async () => {
    const out = await printed();
    expect(out).toMatch(/^http:\/\/127\.0\.0\.1:18789\/gstack\/review\?c=/);
    expect(out).toContain(
      "on this machine only: the gateway listens on loopback only (gateway.bind loopback)",
    );
    expect(out).toContain("messages carry no link");
    expect(out).toContain("set gateway.publicOrigin");
    expect(out).toContain("review.publicBaseUrl");
  });

  it("Tailscale Serve: https on the tailnet name `tailscale status` gives", async () => {
    await configSet("gateway.tailscale.mode", "serve");
    // No tailnet can be joined here: a stand-in for the tailscale command answers its status.
    const bin = join(scratch, "bin");
    await mkdir(bin, { recursive: true });
    await writeFile(
      join(bin, "tailscale"),
      `#!/bin/sh\n[ "$1 $2" = "status --json" ] && echo '{"Self":{"DNSName":"box.tail1234.ts.net.","TailscaleIPs":["100.101.102.103"]}}'\n`,
    );
    await chmod(join(bin, "tailscale"), 0o755);
    const out = await printed({ PATH: `${bin}:${process.env.PATH ?? ""}` });
    expect(out).toMatch(/^https:\/\/box\.tail1234\.ts\.net\/gstack\/review\?c=/);
    expect(out).toContain("from gateway.tailscale.mode serve");
    // Without the command: no link, and why.
    const none = await printed({ PATH: "/usr/bin:/bin" });
    expect(none).toContain("this machine's tailnet name could not be read");
  });

  it("a bind to one address and a port of its own: that address and port", async () => {
    await configSetAll({
      "gateway.tailscale.mode": "off",
      "gateway.bind": "custom",
      "gateway.customBindHost": "192.0.2.7",
      "gateway.port": 19123,
    });
    const out = await printed();
    expect(out).toMatch(/^http:\/\/192\.0\.2\.7:19123\/gstack\/review\?c=/);
    expect(out).toContain("(on http://192.0.2.7:19123, from gateway.bind custom (192.0.2.7))");
  });

  it("gateway.publicOrigin: OpenClaw refuses a plain-http one for another host, and an https one is the links' address", async () => {
    const refused = await openclaw(["config", "set", "gateway.publicOrigin", "http://gw.example.com"]);
    expect(refused.code).not.toBe(0);
    await configSet("gateway.publicOrigin", "https://gw.example.com");
    // Over the bind to 192.0.2.7 the case before left.
    const out = await printed();
    expect(out).toMatch(/^https:\/\/gw\.example\.com\/gstack\/review\?c=/);
    expect(out).toContain("(on https://gw.example.com, from gateway.publicOrigin)");
  });
});

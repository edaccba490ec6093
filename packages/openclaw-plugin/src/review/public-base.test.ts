import { describe, expect, it } from "vitest";
import { publicBase } from "./public-base";

const env = {};
const noAddresses = () => [];
const noTailnet = async () => undefined;
const probes = { env, addresses: noAddresses, tailnetName: noTailnet };

describe("where the person reaches the gateway", () => {
  it("the plugin's own setting wins over everything the gateway says", async () => {
    expect(
      await publicBase(
        { gateway: { publicOrigin: "https://gw.example.com" } } as never,
        "https://mine.example",
        probes,
      ),
    ).toEqual({ url: "https://mine.example", from: "review.publicBaseUrl" });
  });

  it("OpenClaw's gateway.publicOrigin, read by OpenClaw's own rule (a bare origin; a path makes it none)", async () => {
    expect(
      await publicBase({ gateway: { publicOrigin: "https://gw.example.com/" } } as never, undefined, probes),
    ).toEqual({ url: "https://gw.example.com", from: "gateway.publicOrigin" });
    expect(
      (
        await publicBase(
          { gateway: { publicOrigin: "https://gw.example.com/openclaw" } } as never,
          undefined,
          probes,
        )
      ).url,
    ).toBeUndefined();
    // http is for loopback alone: no link a phone could open.
    expect(
      (await publicBase({ gateway: { publicOrigin: "http://127.0.0.1:18789" } } as never, undefined, probes))
        .url,
    ).toBeUndefined();
  });

  it("Tailscale Serve or Funnel: https on this machine's tailnet name, or no link when it cannot be read", async () => {
    const config = { gateway: { tailscale: { mode: "serve" } } };
    expect(
      await publicBase(config, undefined, { ...probes, tailnetName: async () => "box.tail1234.ts.net" }),
    ).toEqual({ url: "https://box.tail1234.ts.net", from: "gateway.tailscale.mode serve" });
    const none = await publicBase(config, undefined, probes);
    expect(none.url).toBeUndefined();
    expect(none.why).toMatch(/tailnet name could not be read/);
  });

  it("a bind to one address others reach: custom, tailnet, or the one LAN address of lan", async () => {
    const port = { env: { OPENCLAW_GATEWAY_PORT: "19001" } };
    expect(
      await publicBase({ gateway: { bind: "custom", customBindHost: "192.0.2.7" } }, undefined, {
        ...probes,
        ...port,
      }),
    ).toEqual({ url: "http://192.0.2.7:19001", from: "gateway.bind custom (192.0.2.7)" });
    expect(
      (
        await publicBase(
          { gateway: { bind: "custom", customBindHost: "192.0.2.7", tls: { enabled: true } } },
          undefined,
          {
            ...probes,
            ...port,
          },
        )
      ).url,
    ).toBe("https://192.0.2.7:19001");
    const addresses = () => [
      { name: "eth0", address: "192.168.1.20" },
      { name: "tailscale0", address: "100.101.102.103" },
      { name: "docker0", address: "172.17.0.1" },
    ];
    expect(
      (await publicBase({ gateway: { bind: "tailnet", port: 18800 } }, undefined, { ...probes, addresses }))
        .url,
    ).toBe("http://100.101.102.103:18800");
    const lan = await publicBase({ gateway: { bind: "lan" } }, undefined, { ...probes, addresses });
    // eth0 and the tailnet's interface: two addresses, and which the person reaches cannot be told.
    expect(lan.url).toBeUndefined();
    expect(lan.why).toMatch(/2 LAN addresses \(192\.168\.1\.20, 100\.101\.102\.103\)/);
    expect(
      (
        await publicBase({ gateway: { bind: "lan" } }, undefined, {
          ...probes,
          addresses: () => [
            { name: "wlan0", address: "192.168.1.20" },
            { name: "docker0", address: "172.17.0.1" },
          ],
        })
      ).url,
    ).toBe("http://192.168.1.20:18789");
  });

  it("loopback alone (the default, auto, a loopback custom host): no link, and the local address for this machine", async () => {
    for (const gateway of [
      {},
      { bind: "loopback" },
      { bind: "auto" },
      { bind: "custom", customBindHost: "127.0.0.1" },
    ]) {
      const found = await publicBase({ gateway }, undefined, probes);
      expect(found.url).toBeUndefined();
      expect(found.local).toBe("http://127.0.0.1:18789");
    }
    expect((await publicBase(undefined, undefined, probes)).why).toMatch(/loopback only/);
  });
});

import { describe, expect, it } from "vitest";
import { routeOfEntry } from "./session-delivery";

describe("the session's route to the person", () => {
  it("reads the delivery context OpenClaw records from the person's last message", () => {
    expect(
      routeOfEntry({
        delivery: {
          kind: "external",
          route: { channel: "telegram", target: { to: "chat-1" } },
          context: { channel: "telegram", to: "chat-1", accountId: "bot", threadId: 7 },
        },
      }),
    ).toEqual({ channel: "telegram", to: "chat-1", accountId: "bot", threadId: 7 });
  });

  it("falls back to the stored route, then to the older flat fields", () => {
    expect(
      routeOfEntry({ delivery: { kind: "external", route: { channel: "slack", target: { to: "C1" } } } }),
    ).toEqual({ channel: "slack", to: "C1" });
    expect(routeOfEntry({ lastChannel: "discord", lastTo: "u-2" })).toEqual({
      channel: "discord",
      to: "u-2",
    });
  });

  it("has no route for a session without a channel (the CLI, the web chat) or none recorded", () => {
    expect(routeOfEntry(undefined)).toBeUndefined();
    expect(routeOfEntry({})).toBeUndefined();
    expect(
      routeOfEntry({ delivery: { kind: "internal", context: { channel: "x", to: "y" } } }),
    ).toBeUndefined();
    expect(routeOfEntry({ deliveryContext: { channel: "webchat", to: "browser" } })).toBeUndefined();
    expect(
      routeOfEntry({ delivery: { kind: "external", context: { channel: "telegram" } } }),
    ).toBeUndefined();
  });
});

import { connect } from "node:net";
import { apiRequest } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Daemon } from "../daemon";
import { useDaemonWorld } from "../daemon-test-world";
import { type TestWorld, testDaemon, waitFor } from "../test-support";

const daemonWorld = useDaemonWorld();
let world: TestWorld;
let daemon: Daemon | undefined;

beforeEach(() => {
  world = daemonWorld.world;
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
});

describe("a request the client aborts", () => {
  it("is one line in the log, without a stack, and the API keeps serving", async () => {
    const lines: string[] = [];
    daemon = testDaemon(world, { log: (line) => lines.push(line) });
    await daemon.start();
    const socketPath = world.layout.dispatch.apiSocket;
    // A POST that promises 1000 bytes, sends 10 and hangs up.
    await new Promise<void>((resolve, reject) => {
      const client = connect(socketPath, () => {
        client.write(
          'POST /v1/sessions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"dispatch',
          () => setImmediate(() => client.destroy()),
        );
      });
      client.once("close", () => resolve());
      client.once("error", reject);
    });
    const entry = await waitFor(() => lines.find((line) => line.includes("POST /v1/sessions")));
    expect(entry).toBe("service API: POST /v1/sessions: the client went away before the request was read");
    expect(lines.join("\n")).not.toMatch(/\n\s+at /);
    expect((await apiRequest({ socketPath }, "GET", "/health")).status).toBe(200);
    expect(lines.filter((line) => line.includes("POST /v1/sessions"))).toHaveLength(1);
  });
});

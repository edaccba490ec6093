import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  connectGateway,
  type GatewayConnection,
  GatewayRequestError,
  makeOpenClawHome,
  type OpenClawGateway,
  type OpenClawHome,
  startOpenClawGateway,
} from "./index";

let home: OpenClawHome;
let gateway: OpenClawGateway;
const connections: GatewayConnection[] = [];

beforeAll(async () => {
  home = await makeOpenClawHome();
  gateway = await startOpenClawGateway({ home: home.home });
});

afterAll(async () => {
  for (const connection of connections) await connection.close();
  await gateway?.stop();
  await home?.remove();
});

async function connect(): Promise<GatewayConnection> {
  const connection = await connectGateway(gateway);
  connections.push(connection);
  return connection;
}

/** What a promise has come to so far: its value, its error, or still pending. */
function track<T>(promise: Promise<T>) {
  const state: { settled: boolean; value?: T; error?: unknown } = { settled: false };
  const done = promise.then(
    (value) => Object.assign(state, { settled: true, value }),
    (error: unknown) => Object.assign(state, { settled: true, error }),
  );
  return { state, done };
}

describe("a connection to the real gateway", () => {
  it("answers requests over one connection, and names the method and the gateway when one fails", async () => {
    const connection = await connect();
    expect(connection.url).toBe(`ws://127.0.0.1:${gateway.port}`);
    const agents = await connection.request<{ defaultId: string; agents: { id: string }[] }>(
      "agents.list",
      {},
    );
    expect(agents.defaultId).toBe("main");
    const history = await connection.request<{ messages: unknown[] }>("chat.history", {
      sessionKey: "agent:main:main",
      limit: 10,
    });
    expect(history.messages).toEqual([]);
    const failed = await connection.request("no.such.method", {}).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(GatewayRequestError);
    expect((failed as GatewayRequestError).method).toBe("no.such.method");
    expect((failed as Error).message).toContain(`no.such.method on the gateway at ${connection.url} failed:`);
    expect((failed as GatewayRequestError).code).toBeDefined();
    expect(connection.closed).toBe(false);
  });

  it("fails a pending request and every later one at once when the gateway is killed, and does not connect to a gateway that is gone", async () => {
    const connection = await connect();
    // A wait for a run that never started stays open until its own limit (ten minutes here).
    const pending = track(
      connection.request(
        "agent.wait",
        { runId: "never-started", timeoutMs: 600_000 },
        { timeoutMs: 600_000 },
      ),
    );
    // Answered after the wait was taken in: the wait is open on the gateway.
    await connection.request("agents.list", {});
    expect(pending.state.settled).toBe(false);
    await gateway.kill();
    await pending.done;
    expect(pending.state.error).toBeInstanceOf(GatewayRequestError);
    expect((pending.state.error as Error).message).toMatch(
      new RegExp(`^agent\\.wait on the gateway at ${connection.url} failed: .*closed`),
    );
    expect(connection.closed).toBe(true);
    const later = await connection.request("agents.list", {}).catch((error: unknown) => error);
    expect((later as Error).message).toMatch(
      /^agents\.list on the gateway at .* failed: the connection closed/,
    );
    await expect(connectGateway(gateway, { connectTimeoutMs: 60_000 })).rejects.toThrow(
      `ws://127.0.0.1:${gateway.port}`,
    );
  });
});

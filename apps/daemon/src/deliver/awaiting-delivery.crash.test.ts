import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { AWAITING_CALLBACK_TYPE, type AwaitingNotice, COMPLETION_CALLBACK_TYPE } from "@gstack/contracts";
import { apiRequest, reachDaemonApi, submitDispatch } from "@gstack/daemon-client";
import { type ScriptedModel, scripted, startScriptedModel } from "@gstack/scripted-model";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import { completionOf, dispatchCommand, makeWorld, type TestWorld, waitFor } from "../test-support";
import { readAwaitingOutbox } from "./awaiting-delivery";
import { verifiedNotice } from "./awaiting-delivery-test-support";
import {
  CALLBACK_SECRET,
  type ReceivedRequest,
  startReceiver,
  type TestReceiver,
} from "./delivery-test-support";

const claude = join(import.meta.dirname, "..", "..", "node_modules", ".bin", "claude");
const PLAN = "## Plan\n1. Add plan.txt.\n2. Commit it.";
const REPORT = "Done.\n\n## What shipped\n- plan.txt\n## Needs human judgment\n- None";

let world: TestWorld;
let model: ScriptedModel;
let home: string;
let receiver: TestReceiver;
const children: ChildProcess[] = [];

/** What the receiver took: each signed body it answered 2xx, as the plugin's route would. */
const taken: { type: string; notice?: AwaitingNotice; request: ReceivedRequest }[] = [];
let accepting = false;

beforeEach(async () => {
  world = await makeWorld();
  home = await mkdtemp(join(tmpdir(), "gstack-claude-home-"));
  taken.length = 0;
  accepting = false;
  model = await startScriptedModel({
    respond: (request) => {
      if (!JSON.stringify(request.body).includes("approved your plan")) return scripted.text(PLAN);
      const messages = (request.body?.messages ?? []) as { content?: unknown }[];
      if (!JSON.stringify(messages.at(-1)?.content ?? "").includes('"tool_result"')) {
        return scripted.write("plan.txt", "planned\n");
      }
      const previous = JSON.stringify(messages.at(-2)?.content ?? "");
      if (previous.includes("git commit")) return scripted.text(REPORT);
      if (previous.includes("git add")) return scripted.bash("git commit -m 'Add plan.txt'");
      return scripted.bash("git add plan.txt");
    },
  });
  // A receiver that checks every signature, as the plugin's route does; the daemon's start-up
  // probe (unsigned) is refused with 401 like there.
  receiver = await startReceiver((request) => {
    if (request.method !== "POST") return { status: 405 };
    let type: string;
    let notice: AwaitingNotice | undefined;
    try {
      type = (JSON.parse(request.body) as { type?: string }).type ?? "";
      if (type === AWAITING_CALLBACK_TYPE) notice = verifiedNotice(request);
      else if (type !== COMPLETION_CALLBACK_TYPE) return { status: 401 };
    } catch {
      return { status: 401 };
    }
    if (!accepting) return { status: 503 };
    taken.push({ type, request, ...(notice ? { notice } : {}) });
    return { status: 200 };
  });
  await mkdir(world.root, { recursive: true });
  await writeFile(world.layout.callbackSecret, CALLBACK_SECRET, { mode: 0o600 });
  await writeFile(
    world.layout.config,
    [
      "dispatch:",
      `  trusted_repos: [${JSON.stringify(world.base)}]`,
      `  openclaw_callback_url: ${JSON.stringify(receiver.url("/gstack/completion"))}`,
      "  agents:",
      "    claude:",
      `      command: [${JSON.stringify(claude)}]`,
    ].join("\n"),
  );
  execFileSync("git", ["-C", world.repo, "config", "user.name", "Scripted Agent"]);
  execFileSync("git", ["-C", world.repo, "config", "user.email", "agent@example.invalid"]);
});

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
  await receiver.close();
  await model.close();
  await rm(home, { recursive: true, force: true });
  await world.cleanup();
});

/** `gstack-dispatch run` in a process of its own, as the service manager starts it. */
async function startDaemon(): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...dispatchCommand(), "run", "--root", world.root], {
    cwd: join(import.meta.dirname, "..", ".."),
    env: {
      ...process.env,
      ...model.claudeEnv(home),
      CLAUDE_CODE_MAX_RETRIES: "0",
      PATH: `${dirname(process.execPath)}:/usr/bin:/bin`,
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  children.push(child);
  await waitFor(async () => {
    const api = await reachDaemonApi(world.layout).catch(() => undefined);
    if (!api) return undefined;
    const health = await apiRequest(api, "GET", "/health").catch(() => undefined);
    return health?.status === 200 ? true : undefined;
  }, 30_000);
  return child;
}

async function killHard(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

describe("a waiting notice to a remote plugin across kill -9 of the daemon", {
  timeout: loadBudget(180_000),
}, () => {
  it("is sent again by the restarted daemon until the receiver takes it, then the report follows", async () => {
    const id = "dispatch-remote-plan";
    let daemon = await startDaemon();
    await submitDispatch(world.layout, {
      id,
      dispatched_by: "wintermute",
      task: "Add plan.txt and commit it",
      project: "acme-widget",
      project_dir: world.repo,
      mode: "plan",
      reply_to: { runtime: "openclaw", session_key: "agent:main:main" },
    });
    // The wait is recorded and its first POST met a receiver that is down.
    const pending = await waitFor(async () => {
      const outbox = await readAwaitingOutbox(world.layout, id).catch(() => undefined);
      return outbox && outbox.attempts >= 1 ? outbox : undefined;
    }, 90_000);
    expect(pending).toMatchObject({ state: "pending", round: 1 });
    await killHard(daemon);
    expect(taken).toHaveLength(0);

    accepting = true;
    daemon = await startDaemon();
    const delivered = await waitFor(async () => {
      const outbox = await readAwaitingOutbox(world.layout, id);
      return outbox?.state === "delivered" ? outbox : undefined;
    }, 60_000);
    expect(delivered.attempts).toBeGreaterThanOrEqual(2);
    expect(taken).toHaveLength(1);
    expect(taken[0]?.notice).toMatchObject({
      dispatch_id: id,
      kind: "plan",
      round: 1,
      reply_to: { session_key: "agent:main:main" },
    });
    expect(taken[0]?.notice?.summary).toContain("Add plan.txt");
    expect(taken[0]?.request.headers["idempotency-key"]).toBe(`${id}:awaiting:1`);

    // Approved on the daemon's host, as the notice's how-to-answer says.
    const api = await reachDaemonApi(world.layout);
    if (!api) throw new Error("no service API");
    const accepted = await apiRequest(api, "POST", "/v1/answer", {
      body: JSON.stringify({ dispatch_id: id, answer: "approve", round: 1 }),
    });
    expect(accepted.status).toBe(200);
    await waitFor(() => completionOf(world.layout, id), 90_000);
    await waitFor(() => (taken.some((entry) => entry.type === COMPLETION_CALLBACK_TYPE) ? true : undefined));
    expect(taken.map((entry) => entry.type)).toEqual([AWAITING_CALLBACK_TYPE, COMPLETION_CALLBACK_TYPE]);
    await killHard(daemon);
  });
});

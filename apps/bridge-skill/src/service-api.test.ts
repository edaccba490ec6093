import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { type RequestOptions, request } from "node:http";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import {
  type CallbackError,
  type DispatchSnapshot,
  type DocumentKind,
  documentKinds,
  gstackLayout,
  parseValue,
} from "@gstack/contracts";
import { Daemon, MAX_DISPATCH_BYTES } from "@gstack/daemon";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadBudget, waitUntil } from "../../../vitest.load-budget";
import { bridgeSkillPath } from "./bridge-skill-path";
import {
  codeBullets,
  codeSpans,
  fencedBlocks,
  markdownSection,
  readSkillFiles,
  tableRows,
} from "./skill-text.test-support";

// The skill's reference is read as a caller would read it, and every request is made the way
// it says, against a real daemon on its real socket: the routes, parameters, answer kinds,
// examples and error codes the text teaches are the ones the daemon serves.

/** A coding agent for the daemon: holds forever on a dispatch whose id ends in `-hold`. */
const AGENT = `
if ((process.env.GSTACK_DISPATCH_ID ?? "").endsWith("-hold")) setInterval(() => {}, 1000);
else console.log("done\\n## What shipped\\n- the change\\n## Decisions made\\n- none\\n## Learnings logged\\n- none\\n## Needs human judgment\\n- Nothing");
`;

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

let base = "";
let socketPath = "";
let repo = "";
let daemon: Daemon | undefined;
let reference = "";

/** One HTTP request; the answer body parsed as JSON. */
function send(options: RequestOptions, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers = {
      ...options.headers,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    };
    const outgoing = request({ ...options, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> });
      });
      response.on("error", reject);
    });
    outgoing.on("error", reject);
    outgoing.end(body);
  });
}

/** One HTTP request over the daemon's Unix socket. */
function call(method: string, path: string, body?: string): Promise<Answer> {
  return send({ socketPath, method, path }, body);
}

/** An action as the reference's table documents it. */
interface DocumentedAction {
  action: string;
  params: string[];
  method: string;
  path: string;
  answer: DocumentKind;
  accepted: number;
}

function documentedActions(): Map<string, DocumentedAction> {
  const actions = new Map<string, DocumentedAction>();
  for (const [actionCell, paramsCell, routeCell, answerCell] of tableRows(
    markdownSection(reference, "Service actions"),
  )) {
    const action = codeSpans(actionCell!)[0]!;
    const [method = "", target = ""] = codeSpans(routeCell!)[0]!.split(" ");
    const answer = codeSpans(answerCell!).find((name) => (documentKinds as string[]).includes(name));
    const accepted = Number(/^([0-9]{3}),/.exec(answerCell!)?.[1] ?? 200);
    actions.set(action, {
      action,
      params: codeSpans(paramsCell!),
      method,
      path: target.split("?")[0]!,
      answer: answer as DocumentKind,
      accepted,
    });
  }
  return actions;
}

/** Calls an action as documented: params in the query for GET, as the JSON body otherwise. */
async function act(action: string, params: Record<string, string> = {}): Promise<Answer> {
  const documented = documentedActions().get(action);
  if (!documented) throw new Error(`the reference does not document ${action}`);
  for (const name of Object.keys(params))
    expect(documented.params, `${action} takes ${name}`).toContain(name);
  if (documented.method === "GET") {
    const query = new URLSearchParams(params).toString();
    return call("GET", query ? `${documented.path}?${query}` : documented.path);
  }
  return call(documented.method, documented.path, JSON.stringify(params));
}

/** Checks an accepted answer: the documented status and the documented document kind. */
function expectDocumentedAnswer(action: string, answer: Answer): Record<string, unknown> {
  const documented = documentedActions().get(action)!;
  expect(answer.status, `${action}: ${JSON.stringify(answer.body)}`).toBe(documented.accepted);
  return parseValue(documented.answer, answer.body, { source: `${action} answer` }) as Record<
    string,
    unknown
  >;
}

/** Checks a refusal: a callback-error with the expected code, which the reference explains. */
function expectRefusal(answer: Answer, code: string): CallbackError {
  const refusal = parseValue("callback-error", answer.body, { source: "refusal" });
  expect(refusal.error, refusal.message).toBe(code);
  const explained = codeBullets(markdownSection(reference, "Delivery errors")).flatMap(
    (bullet) => bullet.codes,
  );
  expect(explained, `the reference explains ${code}`).toContain(code);
  return refusal;
}

function example(kind: string): string {
  const block = fencedBlocks(reference).find((candidate) => candidate.info[1] === kind);
  if (!block) throw new Error(`the reference has no ${kind} example`);
  return block.body;
}

/** The reference's spawn-request example, its dispatch moved to a scratch repository and agent. */
function exampleDispatch(id: string, changes: Record<string, unknown> = {}): string {
  const { dispatch } = JSON.parse(example("spawn-request")) as { dispatch: string };
  return JSON.stringify({
    ...(JSON.parse(dispatch) as Record<string, unknown>),
    id,
    project_dir: repo,
    target_agent: "codex",
    ...changes,
  });
}

/** How long a dispatch with this test's trivial agent may take to reach a state on an idle machine. */
const STATE_IDLE_MS = 30_000;
/** How long starting a daemon may take on an idle machine. */
const START_IDLE_MS = 30_000;
/** A test's limit: several waits for states, on a machine as loaded as it is when the file loads. */
const TEST_BUDGET_MS = loadBudget(4 * STATE_IDLE_MS);

async function snapshotUntil(
  action: "check-status" | "get-completion",
  id: string,
  done: (snapshot: DispatchSnapshot) => boolean,
): Promise<DispatchSnapshot[]> {
  const seen: DispatchSnapshot[] = [];
  await waitUntil(
    async () => {
      const snapshot = expectDocumentedAnswer(
        action,
        await act(action, { dispatch_id: id }),
      ) as DispatchSnapshot;
      seen.push(snapshot);
      return done(snapshot) ? snapshot : undefined;
    },
    {
      idleMs: STATE_IDLE_MS,
      what: `${id} reaching the state waited for (${action})`,
      lastSeen: () => JSON.stringify(seen.at(-1)),
    },
  );
  return seen;
}

beforeAll(async () => {
  reference = (await readSkillFiles(bridgeSkillPath)).find(
    (file) => file.file === "references/dispatch.md",
  )!.content;
  base = await mkdtemp(join(tmpdir(), "bridge-api-"));
  repo = join(base, "trusted", "widget");
  await mkdir(repo, { recursive: true });
  execFileSync("git", ["init", "-q", "-b", "main", repo]);
  execFileSync("git", [
    "-C",
    repo,
    "-c",
    "user.name=t",
    "-c",
    "user.email=t@t",
    "commit",
    "-q",
    "--allow-empty",
    "-m",
    "start",
  ]);
  const agent = join(base, "agent.cjs");
  await writeFile(agent, AGENT);
  const root = join(base, "state");
  socketPath = gstackLayout(root).dispatch.apiSocket;
  daemon = new Daemon({
    root,
    claudeBinary: "/nonexistent/claude",
    openclawWorkspace: false,
    log: () => {},
    settings: {
      trusted_repos: [join(base, "trusted")],
      max_concurrent: 1,
      max_queued: 1,
      agents: {
        codex: { command: [process.execPath, agent, "{prompt}"] },
        gemini: { command: ["/nonexistent/gemini", "{prompt}"] },
      },
    },
  });
  await daemon.start();
}, loadBudget(START_IDLE_MS));

afterAll(async () => {
  await daemon?.stop(0);
  if (base) await rm(base, { recursive: true, force: true });
});

describe("the reference's service API, called as written against a running daemon", {
  timeout: TEST_BUDGET_MS,
}, () => {
  it("listens on the socket the reference names", () => {
    const root = join(base, "state");
    expect(reference).toContain(`\`~/.gstack/${relative(root, socketPath)}\``);
  });

  it("answers GET /health with service-health", async () => {
    expect(reference).toContain("`GET /health` answers `service-health`");
    const health = parseValue("service-health", (await call("GET", "/health")).body);
    expect(health).toMatchObject({ ok: true, daemon: "running" });
  });

  it("runs a dispatch through spawn-session, check-status, list-sessions and get-completion", async () => {
    const id = "dispatch-bridge-api-done";
    const spawned = expectDocumentedAnswer(
      "spawn-session",
      await act("spawn-session", { dispatch: exampleDispatch(id) }),
    );
    // The example answer is the answer, but for where in the queue it landed.
    expect({ ...spawned, position: 1 }).toEqual({ ...JSON.parse(example("spawn-answer")), dispatch_id: id });

    expectDocumentedAnswer("list-sessions", await act("list-sessions"));
    const seen = await snapshotUntil("check-status", id, (snapshot) => snapshot.terminal);
    for (const snapshot of seen.filter((item) => !item.terminal)) expect(snapshot.report).toBeUndefined();

    const completion = (await snapshotUntil("get-completion", id, (snapshot) => snapshot.terminal)).at(-1);
    expect(completion).toMatchObject({ status: "completed", terminal: true });
    expect(completion!.report?.dispatch_id).toBe(id);
    expect(completion!.report_markdown).toContain("## What shipped");
  });

  it("cancels a running dispatch, and answers a finished one as the example does", async () => {
    const id = "dispatch-bridge-api-hold";
    expectDocumentedAnswer("spawn-session", await act("spawn-session", { dispatch: exampleDispatch(id) }));
    await snapshotUntil("check-status", id, (snapshot) => snapshot.status === "running");
    const cancelled = expectDocumentedAnswer(
      "cancel-session",
      await act("cancel-session", { dispatch_id: id, reason: "the user changed their mind" }),
    );
    expect(cancelled).toMatchObject({ outcome: "cancelling", changed: true });
    const ended = (await snapshotUntil("get-completion", id, (snapshot) => snapshot.terminal)).at(-1);
    expect(ended?.status).toBe("cancelled");

    const finished = expectDocumentedAnswer(
      "cancel-session",
      await act("cancel-session", { dispatch_id: "dispatch-bridge-api-done" }),
    );
    expect(finished).toEqual({
      ...JSON.parse(example("cancel-answer")),
      dispatch_id: "dispatch-bridge-api-done",
    });
  });

  it("answers queue_full with retry_after_seconds, and takes the same dispatch once there is room", async () => {
    const running = "dispatch-bridge-api-slot-hold";
    const waiting = "dispatch-bridge-api-wait-hold";
    const refused = "dispatch-bridge-api-later-hold";
    expectDocumentedAnswer(
      "spawn-session",
      await act("spawn-session", { dispatch: exampleDispatch(running) }),
    );
    await snapshotUntil("check-status", running, (snapshot) => snapshot.status === "running");
    const queued = expectDocumentedAnswer(
      "spawn-session",
      await act("spawn-session", { dispatch: exampleDispatch(waiting) }),
    );
    expect(queued["position"]).toBe(1);
    const [snapshot] = await snapshotUntil("check-status", waiting, () => true);
    expect(snapshot).toMatchObject({ status: "queued", terminal: false, position: 1 });

    const full = expectRefusal(
      await act("spawn-session", { dispatch: exampleDispatch(refused) }),
      "queue_full",
    );
    expect(full.retry_after_seconds).toBeGreaterThan(0);

    // A queued dispatch is cancelled at once; then there is room for the refused one, same id.
    const cancelled = expectDocumentedAnswer(
      "cancel-session",
      await act("cancel-session", { dispatch_id: waiting }),
    );
    expect(cancelled).toMatchObject({ outcome: "cancelled", changed: true });
    expectDocumentedAnswer(
      "spawn-session",
      await act("spawn-session", { dispatch: exampleDispatch(refused) }),
    );
    for (const id of [running, refused]) {
      expectDocumentedAnswer("cancel-session", await act("cancel-session", { dispatch_id: id }));
      await snapshotUntil("check-status", id, (item) => item.terminal);
    }
  });

  it("refuses a folder outside trusted_repos as the callback-error example shows", async () => {
    const outside = await mkdtemp(join(base, "outside-"));
    const refusal = expectRefusal(
      await act("spawn-session", {
        dispatch: exampleDispatch("dispatch-bridge-api-outside", { project_dir: outside }),
      }),
      "untrusted_repo",
    );
    const shown = JSON.parse(example("callback-error")) as CallbackError;
    expect({ error: refusal.error, rule: refusal.rule }).toEqual({ error: shown.error, rule: shown.rule });
  });

  it.each([
    {
      code: "duplicate",
      send: () => act("spawn-session", { dispatch: exampleDispatch("dispatch-bridge-api-done") }),
    },
    { code: "invalid_json", send: () => call("POST", "/v1/sessions", "{") },
    {
      code: "invalid_dispatch",
      send: () =>
        act("spawn-session", { dispatch: exampleDispatch("dispatch-bridge-api-bad", { task: "" }) }),
    },
    {
      code: "project_not_found",
      send: () =>
        act("spawn-session", {
          dispatch: exampleDispatch("dispatch-bridge-api-gone", {
            project_dir: join(base, "trusted", "gone"),
          }),
        }),
    },
    {
      code: "unknown_agent",
      send: () =>
        act("spawn-session", {
          dispatch: exampleDispatch("dispatch-bridge-api-agent", { target_agent: "gemini" }),
        }),
    },
    {
      code: "too_large",
      send: () =>
        act("spawn-session", {
          dispatch: exampleDispatch("dispatch-bridge-api-big", { task: "x".repeat(MAX_DISPATCH_BYTES) }),
        }),
    },
    {
      code: "expired",
      send: () =>
        act("spawn-session", {
          dispatch: exampleDispatch("dispatch-bridge-api-old", {
            ttl_seconds: 60,
            created_at: new Date(Date.now() - 2 * 3600_000).toISOString(),
          }),
        }),
    },
    { code: "not_found", send: () => act("check-status", { dispatch_id: "dispatch-bridge-api-never" }) },
    { code: "not_found", send: () => act("cancel-session", { dispatch_id: "dispatch-bridge-api-never" }) },
    { code: "bad_request", send: () => act("check-status") },
    { code: "unknown_action", send: () => call("GET", "/v1/nothing-here") },
    { code: "method_not_allowed", send: () => call("DELETE", "/v1/sessions") },
  ])("answers $code where the reference says so", async ({ code, send }) => {
    expectRefusal(await send(), code);
  });
});

describe("a daemon that requires signatures and also serves TCP, as the reference describes", {
  timeout: TEST_BUDGET_MS,
}, () => {
  let root = "";
  let guarded: Daemon | undefined;

  beforeAll(async () => {
    root = join(base, "guarded");
    const layout = gstackLayout(root);
    await mkdir(root, { recursive: true });
    await writeFile(layout.dispatchSecret, "a-secret-of-enough-length-5678\n", { mode: 0o600 });
    guarded = new Daemon({
      root,
      claudeBinary: "/nonexistent/claude",
      openclawWorkspace: false,
      log: () => {},
      serviceApi: { tcpPort: 0 },
      settings: {
        trusted_repos: [join(base, "trusted")],
        agents: { codex: { command: [process.execPath, join(base, "agent.cjs"), "{prompt}"] } },
      },
    });
    await guarded.start();
  }, loadBudget(START_IDLE_MS));

  afterAll(async () => {
    await guarded?.stop(0);
  });

  it("refuses an unsigned dispatch with bad_signature", async () => {
    const answer = await send(
      { socketPath: gstackLayout(root).dispatch.apiSocket, method: "POST", path: "/v1/sessions" },
      JSON.stringify({ dispatch: exampleDispatch("dispatch-bridge-api-unsigned") }),
    );
    expectRefusal(answer, "bad_signature");
  });

  it("asks for the bearer token from the file the reference names, and refuses a call without it", async () => {
    const layout = gstackLayout(root);
    expect(reference).toContain("`Authorization: Bearer <token>`");
    expect(reference).toContain(`\`~/.gstack/${relative(root, layout.apiToken)}\``);
    const [host, port] = (guarded?.serviceApiTcp ?? "").split(":");
    expect(host).toBe("127.0.0.1");
    const token = (await readFile(layout.apiToken, "utf8")).trim();
    const { method, path } = documentedActions().get("list-sessions")!;
    const at = (headers: Record<string, string>): RequestOptions => ({
      host,
      port: Number(port),
      method,
      path,
      headers,
    });
    expectDocumentedAnswer("list-sessions", await send(at({ authorization: `Bearer ${token}` })));
    expectRefusal(await send(at({})), "unauthorized");
    expectRefusal(await send(at({ authorization: `Bearer ${token}x` })), "unauthorized");
  });
});

import { readFile } from "node:fs/promises";
import { parseValue } from "@gstack/contracts";
import { apiRequest, requestCancel, submitDispatch } from "@gstack/daemon-client";
import { scripted } from "@gstack/scripted-model";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../vitest.load-budget";
import { type ClaudeWorld, makeClaudeWorld } from "./claude-world";
import { auditOf, completionOf, waitFor } from "./test-support";

const REPORT = [
  "Added hello.txt and committed it.",
  "",
  "## What shipped",
  "- hello.txt with a greeting",
  "## Decisions made",
  "- Plain text, no template",
  "## Learnings logged",
  "- tool: Commits in this repo need no hooks",
  "## Needs human judgment",
  "- None",
].join("\n");

const COMMIT_SCRIPT = [
  scripted.write("hello.txt", "hello from the scripted model\n"),
  scripted.bash("git add hello.txt"),
  scripted.bash("git commit -m 'Add hello.txt'"),
  scripted.text(REPORT),
];

let world: ClaudeWorld;

beforeEach(async () => {
  world = await makeClaudeWorld();
});

afterEach(() => world.cleanup());

function dispatch(id: string) {
  return {
    id,
    dispatched_by: "wintermute",
    task: "Add hello.txt with a greeting and commit it",
    project: "acme-widget",
    project_dir: world.repo,
    learnings: ["The widget repo keeps docs in docs/"],
  };
}

describe("the daemon with the real Claude Code CLI and a scripted model", {
  timeout: loadBudget(90_000),
}, () => {
  it("completes a dispatch that writes a file and commits it", async () => {
    await world.start({ script: COMMIT_SCRIPT });
    await submitDispatch(world.layout, dispatch("dispatch-claude-commit"));
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-claude-commit"), 60_000);
    expect(completion).toMatchObject({ status: "completed", commits: 1, retries: 0, agent: "claude" });
    expect(completion.session_id).toEqual(expect.any(String));
    expect(Number(completion.turns)).toBeGreaterThan(0);
    // On the dispatch's own branch, not in the person's checkout.
    expect(world.git("show", "gstack/dispatch-claude-commit:hello.txt")).toBe(
      "hello from the scripted model",
    );
    const report = await readFile(world.layout.dispatch.completedReport("dispatch-claude-commit"), "utf8");
    expect(report).toContain("## What shipped\n\n- hello.txt with a greeting");
    expect(report).toContain("## Decisions made\n\n- Plain text, no template");
    expect(report).toContain("## Needs human judgment\n\n- None");
    const learnings = await readFile(world.layout.project("acme-widget").learnings, "utf8");
    expect(JSON.parse(learnings.trim())).toMatchObject({
      type: "tool",
      insight: "Commits in this repo need no hooks",
    });
    const firstPrompt = world.model?.agentRequests()[0]?.promptText ?? "";
    expect(firstPrompt).toContain("dispatch-claude-commit");
    expect(firstPrompt).toContain("The widget repo keeps docs in docs/");
  });

  it("runs a dispatch spawned over the service API and answers its completion only at the end", async () => {
    await world.start({ script: COMMIT_SCRIPT });
    const target = { socketPath: world.layout.dispatch.apiSocket };
    const spawned = await apiRequest(target, "POST", "/v1/sessions", {
      body: JSON.stringify({ dispatch: JSON.stringify(dispatch("dispatch-claude-api")) }),
    });
    expect(spawned.status).toBe(202);
    const seen: string[] = [];
    const done = await waitFor(async () => {
      const answer = await apiRequest(target, "GET", "/v1/completion?dispatch_id=dispatch-claude-api");
      const snapshot = parseValue("dispatch-snapshot", answer.body);
      seen.push(snapshot.status);
      if (!snapshot.terminal) expect(snapshot.report).toBeUndefined();
      return snapshot.terminal ? snapshot : undefined;
    }, 60_000);
    // The real CLI takes a while: there were answers before the end, none of them a result.
    expect(seen.length).toBeGreaterThan(1);
    expect(seen.slice(0, -1).every((status) => ["queued", "running"].includes(status))).toBe(true);
    const head = world.git("rev-parse", "gstack/dispatch-claude-api");
    expect(done).toMatchObject({ status: "completed", terminal: true, agent: "claude", attempt: 1 });
    expect(done.run?.commit_shas).toEqual([head]);
    expect(done.report).toMatchObject({ status: "completed", commits: 1, commit_shas: [head] });
    expect(done.report_markdown).toContain("## What shipped");
  });

  it("classifies a 429 as a rate limit and retries once as is", async () => {
    await world.start({
      respond: (request) =>
        request.promptText.includes("This is attempt 2") ? undefined : scripted.rateLimited(),
      script: COMMIT_SCRIPT,
    });
    await submitDispatch(world.layout, dispatch("dispatch-claude-429"));
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-claude-429"), 60_000);
    expect(completion).toMatchObject({ status: "completed", commits: 1, retries: 1 });
    const retried = (await auditOf(world.layout)).find((event) => event.event === "retried");
    expect(retried?.reason).toMatch(/^rate_limit/);
    expect(retried?.detail).toMatchObject({ without_learnings: false });
  });

  it("classifies prompt-too-long as a context overflow and retries without learnings", async () => {
    await world.start({
      respond: (request) =>
        request.promptText.includes("What the dispatcher already knows")
          ? scripted.promptTooLong()
          : undefined,
      script: COMMIT_SCRIPT,
    });
    await submitDispatch(world.layout, dispatch("dispatch-claude-long"));
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-claude-long"), 60_000);
    expect(completion).toMatchObject({ status: "completed", retries: 1 });
    const retried = (await auditOf(world.layout)).find((event) => event.event === "retried");
    expect(retried?.reason).toMatch(/^context_overflow/);
    expect(retried?.detail).toMatchObject({ without_learnings: true });
  });

  it("escalates when the retry fails too", async () => {
    await world.start({ script: [scripted.rateLimited()] });
    await submitDispatch(world.layout, dispatch("dispatch-claude-twice"));
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-claude-twice"), 60_000);
    expect(completion).toMatchObject({ status: "failed", error_kind: "rate_limit", retries: 1 });
  });

  it("cancels a hung session and leaves no process behind", async () => {
    await world.start({ script: [scripted.hang()] });
    await submitDispatch(world.layout, dispatch("dispatch-claude-hang"));
    await waitFor(() => (world.model && world.model.hangingCount() > 0 ? true : undefined), 60_000);
    const spawned = (await auditOf(world.layout)).find((event) => event.event === "spawned");
    await requestCancel(world.layout, "dispatch-claude-hang");
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-claude-hang"), 30_000);
    expect(completion).toMatchObject({ status: "cancelled" });
    const gone = await waitFor(() => {
      try {
        process.kill(-Number(spawned?.pid), 0);
        return undefined;
      } catch {
        return true;
      }
    }, 10_000);
    expect(gone).toBe(true);
  });
});

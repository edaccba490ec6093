import { mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { processGroupAlive } from "@gstack/agent-runner";
import { isoWeekOf, openClawLayout, parseJsonLines, processAlive, signDocument } from "@gstack/contracts";
import { requestCancel, submitDispatch } from "@gstack/daemon-client";
import { parseMemoryFile } from "@gstack/learnings";
import { beforeEach, describe, expect, it } from "vitest";
import { Daemon, type DaemonOptions } from "./daemon";
import { useDaemonWorld } from "./daemon-test-world";
import { auditOf, completionOf, dispatchFor, type TestWorld, waitFor } from "./test-support";

const daemonWorld = useDaemonWorld();
let world: TestWorld;
let daemon: Daemon | undefined;

beforeEach(() => {
  world = daemonWorld.world;
  daemon = undefined;
});

async function startDaemon(options: Partial<DaemonOptions> = {}, settings: Record<string, unknown> = {}) {
  daemon = await daemonWorld.start({ retryDelayMs: { rateLimit: 50, other: 50 }, ...options }, settings);
  return daemon;
}

describe("a dispatch that commits", () => {
  it("shares the learnings it reports with the OpenClaw memory", async () => {
    const workspace = join(world.base, "openclaw-workspace");
    await mkdir(workspace);
    await startDaemon({ openclawWorkspace: workspace });
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-memory", "commit hello.txt"));
    await waitFor(() => completionOf(world.layout, "dispatch-memory"));
    const memory = await readFile(openClawLayout(workspace).gstackMemory("acme-widget"), "utf8");
    expect(memory).toContain("> The repo uses plain node for tests");
    const parsed = parseMemoryFile(memory);
    expect(parsed.generated.map((section) => section.entry)).toEqual([
      expect.objectContaining({ type: "tool", origin: "dispatch:dispatch-memory" }),
    ]);
    const shared = (await auditOf(world.layout)).filter((event) => event.event === "learnings_recorded");
    expect(shared.map((event) => event.detail)).toContainEqual(
      expect.objectContaining({ project: "acme-widget", exported: 1 }),
    );
  });

  it("carries the dispatch's reply_to into its completion", async () => {
    await startDaemon();
    const replyTo = { runtime: "openclaw" as const, session_key: "agent:main:main", agent_id: "main" };
    await submitDispatch(world.layout, {
      ...dispatchFor(world, "dispatch-reply", "commit reply.txt"),
      reply_to: replyTo,
    });
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-reply"));
    expect(completion.reply_to).toEqual(replyTo);
  });

  it("ends completed with one commit, a full report, activity, learnings and audit", async () => {
    await startDaemon();
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-one", "commit hello.txt"));
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-one"));
    expect(completion).toMatchObject({
      status: "completed",
      commits: 1,
      retries: 0,
      project: "acme-widget",
      agent: "codex",
    });
    expect(completion.commit_shas).toHaveLength(1);
    const report = await readFile(world.layout.dispatch.completedReport("dispatch-one"), "utf8");
    expect(report).toMatch(/^---\ndispatch_id: dispatch-one\nstatus: completed\n/);
    expect(report).toContain("## What shipped\n\n- commit hello.txt");
    expect(report).toContain("## Learnings logged\n\n- tool: The repo uses plain node for tests");
    const activity = parseJsonLines(
      "activity-entry",
      await readFile(world.layout.activity.week(isoWeekOf(new Date())), "utf8"),
    );
    expect(activity.entries[0]?.value).toMatchObject({
      project: "acme-widget",
      dispatch_id: "dispatch-one",
      outcome: "success",
      source: "daemon",
    });
    const learnings = parseJsonLines(
      "learning",
      await readFile(world.layout.project("acme-widget").learnings, "utf8"),
    );
    expect(learnings.entries[0]?.value).toMatchObject({
      type: "tool",
      source: "observed",
      origin: "dispatch:dispatch-one",
    });
    const events = (await auditOf(world.layout)).map((event) => event.event);
    expect(events).toEqual(
      expect.arrayContaining([
        "received",
        "validated",
        "queued",
        "spawned",
        "completed",
        "activity_recorded",
      ]),
    );
    expect(await readdir(world.layout.dispatch.claimed)).toEqual([]);
  });
});

describe("bad input", () => {
  it("rejects each bad file with a reason and keeps going", async () => {
    const secretless = await startDaemon();
    const incoming = world.layout.dispatch.incoming;
    const good = dispatchFor(world, "dispatch-good", "commit ok.txt");
    await writeFile(join(incoming, "malformed.json"), "{ not json");
    await writeFile(
      join(incoming, "schema.json"),
      JSON.stringify({ ...good, id: "dispatch-schema", task: "" }),
    );
    await writeFile(join(incoming, "traversal.json"), JSON.stringify({ ...good, id: "dispatch-../../etc" }));
    await writeFile(join(world.base, "outside.json"), JSON.stringify({ ...good, id: "dispatch-linked" }));
    await symlink(join(world.base, "outside.json"), join(incoming, "linked.json"));
    await writeFile(
      join(incoming, "huge.json"),
      JSON.stringify({ ...good, id: "dispatch-huge", task: "x".repeat(300_000) }),
    );
    await writeFile(
      join(incoming, "expired.json"),
      JSON.stringify({
        ...good,
        id: "dispatch-expired",
        created_at: "2020-01-01T00:00:00Z",
        ttl_seconds: 60,
      }),
    );
    await writeFile(
      join(incoming, "untrusted.json"),
      JSON.stringify({ ...good, id: "dispatch-untrusted", project_dir: "/" }),
    );
    await writeFile(
      join(incoming, "agent.json"),
      JSON.stringify({ ...good, id: "dispatch-gemini", target_agent: "gemini" }),
    );
    await writeFile(join(incoming, ".hidden.json"), JSON.stringify({ ...good, id: "dispatch-hidden" }));
    await submitDispatch(world.layout, good);
    expect(await waitFor(() => completionOf(world.layout, "dispatch-good"))).toMatchObject({
      status: "completed",
    });
    await secretless.idle();
    const reasons = await waitFor(async () => {
      const names = (await readdir(world.layout.dispatch.rejected)).filter((name) =>
        name.endsWith(".reason.json"),
      );
      return names.length >= 8 ? names : undefined;
    });
    const rules = await Promise.all(
      reasons.map(
        async (name) =>
          JSON.parse(await readFile(join(world.layout.dispatch.rejected, name), "utf8")).rule as string,
      ),
    );
    expect(rules.sort()).toEqual(
      ["json", "schema", "schema", "size", "symlink", "target-agent", "trusted-repos", "ttl"].sort(),
    );
    const events = await auditOf(world.layout);
    expect(events.filter((event) => event.event === "rejected")).toHaveLength(7);
    expect(events.filter((event) => event.event === "expired")).toHaveLength(1);
    expect(await readdir(incoming)).toContain(".hidden.json");
    expect(await readFile(join(world.base, "outside.json"), "utf8")).toContain("dispatch-linked");
  });

  it("requires a valid signature once a secret exists", async () => {
    const secret = "a-long-enough-test-secret-0123456789";
    await writeFile(world.layout.dispatchSecret, secret, { mode: 0o600 }).catch(async () => {
      const { mkdir } = await import("node:fs/promises");
      await mkdir(world.root, { recursive: true });
      await writeFile(world.layout.dispatchSecret, secret, { mode: 0o600 });
    });
    await startDaemon();
    const base = dispatchFor(world, "dispatch-unsigned", "commit a.txt");
    await writeFile(join(world.layout.dispatch.incoming, "unsigned.json"), JSON.stringify(base));
    const forged = { ...dispatchFor(world, "dispatch-forged", "commit b.txt") };
    const signature = signDocument(forged, secret);
    await writeFile(
      join(world.layout.dispatch.incoming, "forged.json"),
      JSON.stringify({ ...forged, task: "commit evil.txt", source_signature: signature }),
    );
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-signed", "commit c.txt"), { secret });
    expect(await waitFor(() => completionOf(world.layout, "dispatch-signed"))).toMatchObject({
      status: "completed",
    });
    const rejected = await waitFor(async () => {
      const events = (await auditOf(world.layout)).filter((event) => event.event === "rejected");
      return events.length >= 2 ? events : undefined;
    });
    expect(rejected.map((event) => String(event.reason).split(":")[0]).sort()).toEqual([
      "signature-mismatch",
      "signature-missing",
    ]);
  });

  it("refuses a secret file others can read", async () => {
    const { mkdir } = await import("node:fs/promises");
    await mkdir(world.root, { recursive: true });
    await writeFile(world.layout.dispatchSecret, "a-long-enough-test-secret-0123456789", { mode: 0o644 });
    await expect(startDaemon()).rejects.toThrow(/chmod 600/);
    daemon = undefined;
  });
});

describe("queue", () => {
  it("runs dispatches over max_concurrent in order", async () => {
    await startDaemon({}, { max_concurrent: 1 });
    for (const id of ["dispatch-q1", "dispatch-q2", "dispatch-q3"]) {
      await submitDispatch(world.layout, dispatchFor(world, id, "sleep 200"));
      await daemon?.idle();
    }
    const events = await waitFor(async () => {
      const found = (await auditOf(world.layout)).filter(
        (event) => event.event === "spawned" || event.event === "completed",
      );
      return found.length >= 6 ? found : undefined;
    });
    expect(events.map((event) => `${event.event}:${event.dispatch_id}`)).toEqual([
      "spawned:dispatch-q1",
      "completed:dispatch-q1",
      "spawned:dispatch-q2",
      "completed:dispatch-q2",
      "spawned:dispatch-q3",
      "completed:dispatch-q3",
    ]);
  });

  it("refuses a second daemon on the same state root", async () => {
    await startDaemon();
    const second = new Daemon({ root: world.root, settings: { trusted_repos: [world.base] } });
    await expect(second.start()).rejects.toThrow(/already running/);
  });
});

describe("failures", () => {
  it("retries a rate limit once, as is", async () => {
    await startDaemon();
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-rl", "rate-limit-once"));
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-rl"));
    expect(completion).toMatchObject({ status: "completed", retries: 1 });
    const retried = (await auditOf(world.layout)).find((event) => event.event === "retried");
    expect(retried?.reason).toMatch(/^rate_limit/);
  });

  it("retries a context overflow without the learnings", async () => {
    await startDaemon();
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-long", "too-long-once"));
    expect(await waitFor(() => completionOf(world.layout, "dispatch-long"))).toMatchObject({
      status: "completed",
      retries: 1,
    });
    const prompts = (await readFile(join(world.base, "prompts.log"), "utf8"))
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { attempt: string; prompt: string });
    expect(prompts.map((entry) => entry.attempt)).toEqual(["1", "2"]);
    expect(prompts[0]?.prompt).toContain("The widget uses tabs");
    expect(prompts[1]?.prompt).not.toContain("The widget uses tabs");
  });

  it("escalates a logic error without retrying", async () => {
    await startDaemon();
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-fail", "fail"));
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-fail"));
    expect(completion).toMatchObject({ status: "failed", error_kind: "logic_error", retries: 0 });
    const report = await readFile(world.layout.dispatch.completedReport("dispatch-fail"), "utf8");
    expect(report).toContain("The dispatch ended **failed** (logic_error)");
  });

  it("cancels a hung session and leaves no process behind", async () => {
    await startDaemon();
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-hang", "hang"));
    const childPid = Number(
      await waitFor(() => readFile(join(world.base, "child.pid"), "utf8").catch(() => undefined)),
    );
    const spawned = (await auditOf(world.layout)).find((event) => event.event === "spawned");
    const groupPid = Number(spawned?.pid);
    await requestCancel(world.layout, "dispatch-hang");
    expect(await waitFor(() => completionOf(world.layout, "dispatch-hang"))).toMatchObject({
      status: "cancelled",
      error_kind: "cancelled",
    });
    // Gone or a zombie: an orphan's zombie waits for pid 1 to collect it, which can take seconds.
    await waitFor(() => (processAlive(childPid) ? undefined : true), 10_000);
    expect(processGroupAlive(groupPid)).toBe(false);
  });

  it("times out a session that runs too long", async () => {
    await startDaemon({}, { session_timeout_seconds: 1 });
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-slow", "sleep 30000"));
    expect(await waitFor(() => completionOf(world.layout, "dispatch-slow"))).toMatchObject({
      status: "timeout",
      error_kind: "timeout",
    });
  });
});

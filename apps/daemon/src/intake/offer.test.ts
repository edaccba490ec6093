import { mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { signDocument } from "@gstack/contracts";
import { readState, submitDispatch } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Daemon, DaemonOptions } from "../daemon";
import { useDaemonWorld } from "../daemon-test-world";
import {
  auditOf,
  completionOf,
  dispatchFor,
  startChildDaemon,
  type TestWorld,
  testDaemon,
  waitFor,
} from "../test-support";

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

async function startDaemon(options: Partial<DaemonOptions> = {}, settings: Record<string, unknown> = {}) {
  daemon = testDaemon(world, options, settings);
  await daemon.start();
  return daemon;
}

const text = (value: unknown) => JSON.stringify(value);

async function runsOf(id: string): Promise<number> {
  try {
    return (await readFile(join(world.base, "prompts.log"), "utf8"))
      .split("\n")
      .filter((line) => line.includes(`"id":"${id}"`)).length;
  } catch {
    return 0;
  }
}

describe("Daemon.offer", () => {
  it("takes a dispatch as durably as a dropped file and runs it", async () => {
    const running = await startDaemon();
    const verdict = await running.offer(text(dispatchFor(world, "dispatch-offered", "commit offered.txt")), {
      source: "plugin:wintermute",
    });
    expect(verdict).toEqual({ accepted: true, id: "dispatch-offered", position: 1 });
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-offered"));
    expect(completion).toMatchObject({ status: "completed", commits: 1 });
    const events = (await auditOf(world.layout)).filter(
      (event) =>
        event.dispatch_id === "dispatch-offered" ||
        (event.event === "received" && (event.detail as { source?: string })?.source),
    );
    const intake = events.filter((event) =>
      ["received", "validated", "queued"].includes(String(event.event)),
    );
    expect(intake.map((event) => event.event)).toEqual(["received", "validated", "queued"]);
    for (const event of intake) {
      expect(event.detail).toMatchObject({ source: "plugin:wintermute" });
    }
    // Archived like a claimed file once finished.
    expect(
      JSON.parse(
        await readFile(join(world.layout.dispatch.sessionDir("dispatch-offered"), "dispatch.json"), "utf8"),
      ).id,
    ).toBe("dispatch-offered");
    expect(await readdir(world.layout.dispatch.claimed)).toEqual([]);
  });

  it("gives the position in the line when every slot is taken", async () => {
    const running = await startDaemon({}, { max_concurrent: 1 });
    const first = await running.offer(text(dispatchFor(world, "dispatch-slot", "sleep 400")), {
      source: "t",
    });
    const second = await running.offer(text(dispatchFor(world, "dispatch-line-1", "say hi")), {
      source: "t",
    });
    const third = await running.offer(text(dispatchFor(world, "dispatch-line-2", "say hi")), { source: "t" });
    expect([first, second, third]).toEqual([
      { accepted: true, id: "dispatch-slot", position: 1 },
      { accepted: true, id: "dispatch-line-1", position: 1 },
      { accepted: true, id: "dispatch-line-2", position: 2 },
    ]);
    // Waiting ones are on disk before the offer resolves.
    expect((await readState(world.layout, "dispatch-line-2"))?.status).toBe("queued");
    expect(JSON.parse(await readFile(world.layout.dispatch.queue, "utf8")).queue).toEqual([
      "dispatch-line-1",
      "dispatch-line-2",
    ]);
    for (const id of ["dispatch-slot", "dispatch-line-1", "dispatch-line-2"]) {
      expect(await waitFor(() => completionOf(world.layout, id))).toMatchObject({ status: "completed" });
    }
  });

  it("refuses by the same rules as a dropped file, audits each refusal and queues nothing", async () => {
    const secret = "a-long-enough-test-secret-0123456789";
    await mkdir(world.root, { recursive: true });
    await writeFile(world.layout.dispatchSecret, secret, { mode: 0o600 });
    await mkdir(join(world.base, "elsewhere"));
    await symlink(join(world.base, "elsewhere"), join(world.repo, "escape"));
    const running = await startDaemon(
      { maxDispatchBytes: 4096 },
      { trusted_repos: [world.repo], clawvisor_url: "http://127.0.0.1:9/" },
    );
    const signed = (id: string, extra: Record<string, unknown> = {}) => {
      const unsigned = dispatchFor(world, id, "say hi", extra);
      return { ...unsigned, source_signature: signDocument(unsigned, secret) };
    };
    const cases: Array<[string, string]> = [
      ["size", text(signed("dispatch-big", { task: "x".repeat(5000) }))],
      ["encoding", `{"id":"dispatch-bad-text","task":"\uD800"}`],
      ["json", "{ not json"],
      ["schema", text(signed("dispatch-schema", { task: "" }))],
      ["signature-missing", text(dispatchFor(world, "dispatch-unsigned", "say hi"))],
      ["signature-mismatch", text({ ...signed("dispatch-forged"), task: "commit evil.txt" })],
      ["ttl", text(signed("dispatch-old", { created_at: "2020-01-01T00:00:00Z", ttl_seconds: 60 }))],
      ["target-agent", text(signed("dispatch-gemini", { target_agent: "gemini" }))],
      ["callback-url", text(signed("dispatch-callback", { callback_url: "https://elsewhere.example/cb" }))],
      ["project-dir", text(signed("dispatch-missing", { project_dir: join(world.repo, "missing") }))],
      ["trusted-repos", text(signed("dispatch-escape", { project_dir: join(world.repo, "escape") }))],
    ];
    const verdicts = [];
    for (const [, content] of cases) verdicts.push(await running.offer(content, { source: "test" }));
    expect(verdicts.map((verdict) => (verdict.accepted ? "accepted" : verdict.rule))).toEqual(
      cases.map(([rule]) => rule),
    );
    for (const verdict of verdicts) {
      if (verdict.accepted) continue;
      expect(verdict.reason.length).toBeGreaterThan(10);
    }
    expect(verdicts[6]).toMatchObject({ id: "dispatch-old" });
    const audit = await auditOf(world.layout);
    const refusals = audit.filter((event) => event.event === "rejected" || event.event === "expired");
    expect(refusals.map((event) => String(event.reason).split(":")[0])).toEqual(cases.map(([rule]) => rule));
    expect(refusals.find((event) => String(event.reason).startsWith("ttl:"))?.event).toBe("expired");
    for (const event of refusals) {
      expect(event.detail).toMatchObject({ source: "test", via: "offer", saved_as: null });
    }
    expect(audit.filter((event) => event.event === "queued")).toEqual([]);
    expect(await readdir(world.layout.dispatch.rejected)).toEqual([]);
    expect(await readdir(world.layout.dispatch.sessions)).toEqual([]);
    expect(running.snapshot()).toEqual({ running: [], queued: [] });
    // The same content, signed and in bounds, is taken.
    expect(await running.offer(text(signed("dispatch-fine")), { source: "test" })).toMatchObject({
      accepted: true,
    });
  });

  it("refuses an id already taken, queued, finished, or waiting in dispatch/ or claimed/", async () => {
    const running = await startDaemon({}, { max_concurrent: 1 });
    const offer = (id: string, task = "say hi") =>
      running.offer(text(dispatchFor(world, id, task)), { source: "test" });
    expect(await offer("dispatch-busy", "sleep 1500")).toMatchObject({ accepted: true });
    expect(await offer("dispatch-waits")).toMatchObject({ accepted: true });
    expect(await offer("dispatch-busy")).toMatchObject({
      accepted: false,
      rule: "duplicate",
      id: "dispatch-busy",
    });
    expect(await offer("dispatch-waits")).toMatchObject({ accepted: false, rule: "duplicate" });
    await waitFor(() => completionOf(world.layout, "dispatch-waits"));
    expect(await offer("dispatch-waits")).toMatchObject({ accepted: false, rule: "duplicate" });
    // Claimed but not yet given a state, as between a claim and its queueing.
    await writeFile(
      join(world.layout.dispatch.claimed, "dispatch-claimed.json"),
      text(dispatchFor(world, "dispatch-claimed", "say hi")),
    );
    expect(await offer("dispatch-claimed")).toMatchObject({ accepted: false, rule: "duplicate" });
    // Sitting in dispatch/: the offer goes through intake before the file does, and loses to it.
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-sitting", "say hi"));
    expect(await offer("dispatch-sitting")).toMatchObject({ accepted: false, rule: "duplicate" });
    expect(await waitFor(() => completionOf(world.layout, "dispatch-sitting"))).toMatchObject({
      status: "completed",
    });
    const audit = await auditOf(world.layout);
    expect(
      audit.filter((event) => event.event === "validated" && event.dispatch_id === "dispatch-busy"),
    ).toHaveLength(1);
  });

  it("runs a dispatch exactly once when the same id is offered and dropped as a file at the same time", async () => {
    const running = await startDaemon({}, { max_concurrent: 4 });
    const rounds = 16;
    const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
    const verdicts = [];
    for (let index = 0; index < rounds; index += 1) {
      const dispatch = dispatchFor(world, `dispatch-race-${index}`, "say hi");
      const drop = () => submitDispatch(world.layout, dispatch);
      const offer = () => running.offer(text(dispatch), { source: "race" });
      if (index < 2) {
        // The first round lets the file win outright, the second the offer: the other door
        // opens only once the first has taken the dispatch (a fixed lead can lose under load).
        if (index === 0) {
          await drop();
          await waitFor(async () =>
            (await auditOf(world.layout)).some(
              (event) => event.event === "validated" && event.dispatch_id === dispatch.id,
            )
              ? true
              : undefined,
          );
          verdicts.push(await offer());
        } else {
          verdicts.push(await offer());
          await drop();
        }
        continue;
      }
      // The others start the second door 0 to 12 ms after the first, one way round or the other.
      const lead = [0, 1, 3, 6, 12][index % 5] as number;
      if (index % 2 === 0) {
        const dropped = drop();
        await sleep(lead);
        verdicts.push(await offer());
        await dropped;
      } else {
        const offered = offer();
        await sleep(lead);
        await drop();
        verdicts.push(await offered);
      }
    }
    expect(verdicts[0]).toMatchObject({ accepted: false, rule: "duplicate" });
    expect(verdicts[1]).toMatchObject({ accepted: true });
    await running.idle();
    for (let index = 0; index < rounds; index += 1) {
      const id = `dispatch-race-${index}`;
      expect(await waitFor(() => completionOf(world.layout, id))).toMatchObject({ status: "completed" });
    }
    await running.idle();
    const audit = await auditOf(world.layout);
    for (let index = 0; index < rounds; index += 1) {
      const id = `dispatch-race-${index}`;
      expect(await runsOf(id)).toBe(1);
      expect(audit.filter((event) => event.event === "validated" && event.dispatch_id === id)).toHaveLength(
        1,
      );
      const refused = audit.filter(
        (event) =>
          event.event === "rejected" &&
          event.dispatch_id === id &&
          String(event.reason).startsWith("duplicate:"),
      );
      // Exactly one door lost, and the verdict says which.
      expect(refused).toHaveLength(1);
      const offerLost = (refused[0]?.detail as { via?: string } | undefined)?.via === "offer";
      expect(verdicts[index]?.accepted).toBe(!offerLost);
      if (!offerLost) {
        expect(await readdir(world.layout.dispatch.rejected)).toContain(`${id}.reason.json`);
      }
    }
  });

  it("refuses while the daemon is stopping, and before it started", async () => {
    const fresh = testDaemon(world);
    expect(
      await fresh.offer(text(dispatchFor(world, "dispatch-early", "say hi")), { source: "t" }),
    ).toMatchObject({
      accepted: false,
      rule: "not_started",
    });
    const running = await startDaemon({}, { max_concurrent: 1 });
    await running.offer(text(dispatchFor(world, "dispatch-long", "sleep 800")), { source: "t" });
    const stopping = running.stop(5000);
    const verdict = await running.offer(text(dispatchFor(world, "dispatch-late", "say hi")), { source: "t" });
    expect(verdict).toMatchObject({ accepted: false, rule: "stopping" });
    await stopping;
    daemon = undefined;
    expect(await readState(world.layout, "dispatch-late")).toBeUndefined();
    const refused = (await auditOf(world.layout)).find(
      (event) => event.event === "rejected" && String(event.reason).startsWith("stopping:"),
    );
    expect(refused?.detail).toMatchObject({ source: "t", via: "offer" });
  });

  it("loses nothing when the daemon is killed right after an offer is accepted", async () => {
    const id = "dispatch-offer-crash";
    const crashing = startChildDaemon(world, { offerThenCrash: dispatchFor(world, id, `commit crash.txt`) });
    expect(await crashing.exited).toBe("SIGKILL");
    expect(crashing.output()).toContain(`offer verdict {"accepted":true,"id":"${id}","position":1}`);
    expect(await runsOf(id)).toBe(0);

    daemon = testDaemon(world);
    await daemon.start();
    const completion = await waitFor(() => completionOf(world.layout, id));
    expect(completion).toMatchObject({ status: "completed", commits: 1 });
    await daemon.idle();
    expect(await runsOf(id)).toBe(1);
    const terminal = (await auditOf(world.layout)).filter(
      (event) => event.dispatch_id === id && event.event === "completed",
    );
    expect(terminal).toHaveLength(1);
  });
});

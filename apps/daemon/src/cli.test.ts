import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseValue, processAlive } from "@gstack/contracts";
import { readAllStates, readQueueFile, submitDispatch } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../vitest.load-budget";
import {
  auditOf,
  completionOf,
  dispatchCommand,
  dispatchFor,
  makeWorld,
  type TestWorld,
  waitFor,
} from "./test-support";

let world: TestWorld;
const children: ChildProcess[] = [];

beforeEach(async () => {
  world = await makeWorld();
});

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
  await world.cleanup();
});

async function writeConfig(extra = "") {
  await mkdir(world.root, { recursive: true });
  await writeFile(
    world.layout.config,
    [
      "telemetry: off",
      "dispatch:",
      "  trusted_repos:",
      `    - ${world.base}`,
      "  heartbeat_seconds: 5",
      "  agents:",
      "    codex:",
      `      command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(world.agentScript)}, "{prompt}"]`,
      extra,
    ].join("\n"),
  );
}

function startCli(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [...dispatchCommand(), ...args, "--root", world.root], {
    cwd: join(import.meta.dirname, ".."),
    env: { ...process.env, PATH: "/usr/bin:/bin", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  // "close", not "exit": the output is read whole only once the pipes closed.
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  return { child, exited, output: () => output };
}

function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...dispatchCommand(), ...args],
      { cwd: join(import.meta.dirname, ".."), env: { ...process.env, PATH: "/usr/bin:/bin" } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

async function waitForEvent(name: string, id?: string) {
  return waitFor(async () =>
    (await auditOf(world.layout)).find(
      (event) => event.event === name && (id === undefined || event.dispatch_id === id),
    ),
  );
}

describe("gstack-dispatch run", () => {
  it("cancels running sessions at once on a second SIGTERM instead of waiting out the grace", async () => {
    await writeConfig("  shutdown_grace_seconds: 300");
    const daemon = startCli(["run"]);
    await waitForEvent("daemon_started");
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-twice", "sleep 600000"));
    await waitForEvent("spawned", "dispatch-twice");
    daemon.child.kill("SIGTERM");
    await waitForEvent("daemon_stopping");
    const second = Date.now();
    daemon.child.kill("SIGTERM");
    expect(await daemon.exited).toBe(0);
    // Far below the 300 s grace: the second signal ended it (the bound only guards a hang).
    expect(Date.now() - second).toBeLessThan(30_000);
    expect(daemon.output()).toContain("SIGTERM again: cancelling running sessions now");
    const states = await readAllStates(world.layout);
    expect(states.map((state) => [state.id, state.status])).toEqual([["dispatch-twice", "queued"]]);
    expect(await readQueueFile(world.layout)).toEqual(["dispatch-twice"]);
  });

  it(
    "keeps the heartbeat fresh over several intervals, and status says the daemon runs",
    async () => {
      await writeConfig();
      const daemon = startCli(["run"]);
      await waitForEvent("daemon_started");
      // Four beats in a row, each newer than the one before: the heartbeat keeps being written.
      // (How fresh a beat is depends on the machine's load, so the test waits for each one.)
      const beats: number[] = [];
      for (let interval = 0; interval < 4; interval += 1) {
        const beat = await waitFor(async () => {
          try {
            const heartbeat = parseValue(
              "heartbeat",
              JSON.parse(await readFile(world.layout.dispatch.heartbeat, "utf8")),
            );
            const at = new Date(heartbeat.ts).getTime();
            return at > (beats.at(-1) ?? 0) ? at : undefined;
          } catch {
            return undefined; // not written yet, or being replaced
          }
        }, 15_000);
        beats.push(beat);
      }
      expect(beats).toHaveLength(4);
      const status = await runCli(["status", "--root", world.root]);
      expect(status.stdout.split("\n")[0]).toMatch(/^daemon running \(pid \d+, local-only/);
      daemon.child.kill("SIGTERM");
      expect(await daemon.exited).toBe(0);
    },
    loadBudget(90_000),
  );

  it("finishes running sessions on SIGTERM and exits 0", async () => {
    await writeConfig();
    const daemon = startCli(["run"]);
    await waitForEvent("daemon_started");
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-term", "sleep 1500"));
    await waitForEvent("spawned", "dispatch-term");
    daemon.child.kill("SIGTERM");
    expect(await daemon.exited).toBe(0);
    expect(await completionOf(world.layout, "dispatch-term")).toMatchObject({ status: "completed" });
    const events = (await auditOf(world.layout)).map((event) => event.event);
    expect(events.indexOf("daemon_stopping")).toBeLessThan(events.indexOf("completed"));
    expect(events.at(-1)).toBe("daemon_stopped");
    expect(daemon.output()).toContain("SIGTERM: finishing running sessions");
  });

  it("re-queues sessions still running after the grace period and runs them on the next start", async () => {
    await writeConfig("  shutdown_grace_seconds: 0");
    const first = startCli(["run"]);
    await waitForEvent("daemon_started");
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-requeue", "sleep-first 60000"));
    await waitForEvent("spawned", "dispatch-requeue");
    await waitFor(() => readFile(join(world.base, "slept-once"), "utf8").catch(() => undefined));
    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);
    expect(await readQueueFile(world.layout)).toEqual(["dispatch-requeue"]);
    expect((await readAllStates(world.layout))[0]).toMatchObject({
      id: "dispatch-requeue",
      status: "queued",
    });
    const second = startCli(["run"]);
    expect(await waitFor(() => completionOf(world.layout, "dispatch-requeue"))).toMatchObject({
      status: "completed",
    });
    await waitForEvent("recovered", "dispatch-requeue");
    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
  });

  it("kills the orphaned agent of a crashed daemon and runs the dispatch again", async () => {
    await writeConfig();
    const first = startCli(["run"]);
    await waitForEvent("daemon_started");
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-orphan", "sleep-first 60000"));
    const spawned = await waitForEvent("spawned", "dispatch-orphan");
    await waitFor(() => readFile(join(world.base, "slept-once"), "utf8").catch(() => undefined));
    first.child.kill("SIGKILL");
    await first.exited;
    const orphan = Number(spawned.pid);
    expect(processAlive(orphan)).toBe(true);
    const second = startCli(["run"]);
    expect(await waitFor(() => completionOf(world.layout, "dispatch-orphan"))).toMatchObject({
      status: "completed",
    });
    expect(await waitForEvent("orphan_killed", "dispatch-orphan")).toMatchObject({ pid: orphan });
    expect(processAlive(orphan)).toBe(false);
    second.child.kill("SIGTERM");
    await second.exited;
  });

  it("fails fast with one readable line when no agent can run", async () => {
    await mkdir(world.root, { recursive: true });
    const result = await runCli(["run", "--root", world.root]);
    expect(result.code).not.toBe(0);
    expect(result.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(/^gstack-dispatch: 'claude' is not on PATH/),
    ]);
  });

  it("names the file, field and rule of a broken config", async () => {
    await mkdir(world.root, { recursive: true });
    await writeFile(world.layout.config, "dispatch:\n  max_concurrent: lots\n");
    const result = await runCli(["run", "--root", world.root]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("config.yaml");
    expect(result.stderr).toContain("max_concurrent");
    expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
  });
});

describe("gstack-dispatch status and cancel", () => {
  it("shows a running session as list-sessions JSON and cancels it", async () => {
    await writeConfig("  max_concurrent: 1");
    const daemon = startCli(["run"]);
    await waitForEvent("daemon_started");
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-status-1", "hang"));
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-status-2", "commit two.txt"));
    await waitForEvent("spawned", "dispatch-status-1");
    await waitForEvent("queued", "dispatch-status-2");
    const status = await runCli(["status", "--json", "--root", world.root]);
    expect(status.code).toBe(0);
    const sessions = parseValue("list-sessions", JSON.parse(status.stdout));
    expect(sessions).toMatchObject({ active: 1, queued: 1, max_concurrent: 1 });
    expect(sessions.sessions[0]).toMatchObject({
      id: "dispatch-status-1",
      project: "acme-widget",
      commits: 0,
    });
    expect(sessions.queue?.[0]).toMatchObject({ id: "dispatch-status-2" });
    const text = await runCli(["status", "--root", world.root]);
    expect(text.stdout).toContain("daemon running");
    expect(text.stdout).toContain("▶ dispatch-status-1");
    const cancel = await runCli(["cancel", "dispatch-status-1", "--root", world.root]);
    expect(cancel.stdout).toContain("dispatch-status-1: cancelled");
    expect(await waitFor(() => completionOf(world.layout, "dispatch-status-2"))).toMatchObject({
      status: "completed",
    });
    daemon.child.kill("SIGTERM");
    expect(await daemon.exited).toBe(0);
  });

  it("submits, shows one dispatch and cancels through the service API while the daemon runs", async () => {
    await writeConfig();
    const daemon = startCli(["run"]);
    await waitForEvent("daemon_started");
    const file = join(world.base, "one.json");
    await writeFile(file, JSON.stringify(dispatchFor(world, "dispatch-cli-api", "commit cli-api.txt")));
    const submitted = await runCli(["submit", file, "--root", world.root]);
    expect(submitted.stdout).toMatch(/^submitted dispatch-cli-api → queued at position 1 \(service API\)\n$/);
    const done = await waitFor(() => completionOf(world.layout, "dispatch-cli-api"));
    const shown = await runCli(["status", "dispatch-cli-api", "--json", "--root", world.root]);
    const snapshot = parseValue("dispatch-snapshot", JSON.parse(shown.stdout));
    expect(snapshot).toMatchObject({
      status: "completed",
      terminal: true,
      run: { commit_shas: done.commit_shas },
    });
    const cancel = await runCli(["cancel", "dispatch-cli-api", "--root", world.root]);
    expect(cancel.stdout).toBe("dispatch-cli-api: already completed; nothing changed\n");
    const again = await runCli(["submit", file, "--root", world.root]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/^gstack-dispatch: dispatch-cli-api refused: .*\(duplicate\)\n$/);
    daemon.child.kill("SIGTERM");
    expect(await daemon.exited).toBe(0);
    // With no daemon, the same question is answered from the files.
    const offline = await runCli(["status", "dispatch-cli-api", "--root", world.root]);
    expect(offline.stdout).toMatch(/^dispatch-cli-api: completed after \d+ s with 1 commit\(s\)\n/);
  }, 60_000);

  it("submits a dispatch file through the service API with the fields its flags replace", async () => {
    await writeConfig();
    const daemon = startCli(["run"]);
    await waitForEvent("daemon_started");
    const file = join(world.base, "template.json");
    await writeFile(
      file,
      JSON.stringify(dispatchFor(world, "dispatch-cli-template", "commit from-file.txt")),
    );
    const submitted = await runCli([
      "submit",
      file,
      "--task",
      "commit from-flag.txt",
      "--budget",
      "2",
      "--root",
      world.root,
    ]);
    expect(submitted.stderr).toBe("");
    expect(submitted.stdout).toBe(
      "submitted dispatch-cli-template → queued at position 1 (service API); task, budget_usd from the command line\n",
    );
    await waitFor(() => completionOf(world.layout, "dispatch-cli-template"));
    // The agent was given the flag's task, not the file's.
    const prompts = (await readFile(join(world.base, "prompts.log"), "utf8"))
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { id: string; prompt: string })
      .filter((entry) => entry.id === "dispatch-cli-template");
    expect(prompts).toHaveLength(1);
    expect(prompts[0]?.prompt).toContain("commit from-flag.txt");
    expect(prompts[0]?.prompt).not.toContain("from-file.txt");
    daemon.child.kill("SIGTERM");
    expect(await daemon.exited).toBe(0);
  });

  it("exits non-zero with one line when cancelling an unknown id", async () => {
    await writeConfig();
    const result = await runCli(["cancel", "dispatch-nobody", "--root", world.root]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toBe("gstack-dispatch: no queued or running dispatch dispatch-nobody\n");
  });

  it("refuses a traversal id on the command line", async () => {
    const result = await runCli(["cancel", "../../etc", "--root", world.root]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/^gstack-dispatch: /);
  });
});

describe("gstack-dispatch install --dry-run", () => {
  it("prints a launchd plist that plistlib accepts, with an absolute PATH", async () => {
    const result = await runCli(["install", "--dry-run", "--platform", "darwin", "--root", world.root]);
    expect(result.code).toBe(0);
    const plistFile = join(world.base, "unit.plist");
    await writeFile(plistFile, result.stdout);
    const parsed = await new Promise<string>((resolve, reject) =>
      execFile(
        "python3",
        [
          "-c",
          "import json,plistlib,sys; print(json.dumps(plistlib.load(open(sys.argv[1],'rb'))))",
          plistFile,
        ],
        (error, stdout) => (error ? reject(error) : resolve(stdout)),
      ),
    );
    const plist = JSON.parse(parsed) as Record<string, unknown> & {
      EnvironmentVariables: Record<string, string>;
    };
    expect(plist).toMatchObject({
      Label: "dev.gstack.dispatch",
      KeepAlive: { SuccessfulExit: false },
      RunAtLoad: true,
    });
    expect(plist.ProgramArguments).toEqual([
      process.execPath,
      expect.stringMatching(/dist\/cli\.js$/),
      "run",
    ]);
    expect(plist.EnvironmentVariables.GSTACK_HOME).toBe(world.root);
    for (const entry of plist.EnvironmentVariables.PATH?.split(":") ?? [])
      expect(entry.startsWith("/")).toBe(true);
  });

  it("prints a systemd user unit that systemd-analyze verifies", async () => {
    const result = await runCli(["install", "--dry-run", "--platform", "linux", "--root", world.root]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("KillMode=mixed");
    expect(result.stdout).toContain("Restart=on-failure");
    const unitDir = join(world.base, "units");
    await mkdir(unitDir);
    const unitFile = join(unitDir, "gstack-dispatch.service");
    await writeFile(unitFile, result.stdout);
    const verify = await new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile("systemd-analyze", ["verify", unitFile], (error, _stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, stderr }),
      ),
    );
    if (
      verify.code === 127 ||
      (/ENOENT|not found/.test(verify.stderr) && verify.code !== 0 && !verify.stderr.includes(unitFile))
    ) {
      // systemd-analyze is not installed here: the unit was still checked field by field above.
      return;
    }
    const problems = verify.stderr
      .split("\n")
      .filter((line) => line.includes("gstack-dispatch.service") && !/Failed to .*(bus|manager)/i.test(line));
    expect(problems).toEqual([]);
    expect(await readFile(unitFile, "utf8")).toContain(`Environment=GSTACK_HOME=${world.root}`);
  });
});

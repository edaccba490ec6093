import { stat } from "node:fs/promises";
import { submitDispatch } from "@gstack/daemon-client";
import { scripted } from "@gstack/scripted-model";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GstackWorld, makeGstackWorld, startCodingDaemon, waitFor } from "../openclaw-world";
import { readDispatchView } from "./dispatch-view";
import { renderDispatchPage } from "./render";
import { findTestCommand, testRunsInReport, testRunsInStream } from "./test-runs";

/** A Bash tool use and its result as Claude Code's stream-json writes them. */
function bashTurn(id: string, command: string, result?: { text: string; isError?: boolean }): string {
  const use = JSON.stringify({
    type: "assistant",
    message: { id: `msg-${id}`, content: [{ type: "tool_use", id, name: "Bash", input: { command } }] },
  });
  if (!result) return use;
  const block: Record<string, unknown> = { type: "tool_result", tool_use_id: id, content: result.text };
  if (result.isError !== undefined) block.is_error = result.isError;
  return `${use}\n${JSON.stringify({ type: "user", message: { role: "user", content: [block] } })}`;
}

describe("which commands run tests", () => {
  it.each([
    "npm test",
    "pnpm test",
    "pnpm run test:unit",
    "yarn test --watch=false",
    "npx vitest run src",
    "pnpm exec vitest run",
    "jest",
    "pytest -q tests/",
    "python3 -m pytest",
    "go test ./...",
    "cargo test --all",
    "bun test",
    "make test",
    "CI=1 npm test",
    "timeout 60 go test ./...",
    "cd pkg && pnpm test",
  ])("%s runs tests", (command) => {
    expect(findTestCommand(command)).toBeDefined();
  });

  it.each([
    "git commit -m 'make tests pass'",
    "grep -r vitest package.json",
    "cat test/fixture.txt",
    "echo npm test",
    "ls tests",
    "npm install",
    "cargo build",
  ])("%s does not", (command) => {
    expect(findTestCommand(command)).toBeUndefined();
  });

  it("the exit status is the tests' own only when they run last, after && alone", () => {
    expect(findTestCommand("cd pkg && pnpm test")?.statusIsTests).toBe(true);
    expect(findTestCommand("pnpm test | tail -20")?.statusIsTests).toBe(false);
    expect(findTestCommand("pnpm test || true")?.statusIsTests).toBe(false);
    expect(findTestCommand("false; pnpm test")?.statusIsTests).toBe(false);
    expect(findTestCommand("echo 'a && b' && go test ./...")?.statusIsTests).toBe(true);
  });
});

describe("test runs in an agent's stream", () => {
  it("passed, failed with its exit code, refused, piped and unanswered: each as much as is known", () => {
    const stream = [
      JSON.stringify({ type: "system", subtype: "init", session_id: "s" }),
      bashTurn("t1", "npm test", { text: "> node test.js\n\nall 3 passed" }),
      bashTurn("t2", "pnpm run test:unit", { text: "Error: Exit code 1\n1 failed", isError: true }),
      bashTurn("t3", "cargo test", { text: "This command requires approval", isError: true }),
      bashTurn("t4", "pytest | tail -5", { text: "5 passed", isError: false }),
      bashTurn("t5", "git status", { text: "clean" }),
      bashTurn("t6", "go test ./..."),
      "{torn line",
    ].join("\n");
    expect(testRunsInStream(stream)).toEqual([
      { command: "npm test", outcome: "passed", exitCode: 0, source: "agent" },
      { command: "pnpm run test:unit", outcome: "failed", exitCode: 1, source: "agent" },
      {
        command: "cargo test",
        outcome: "unknown",
        note: "not run: the command was refused",
        source: "agent",
      },
      {
        command: "pytest | tail -5",
        outcome: "unknown",
        note: "the command's exit status is not the tests' own",
        source: "agent",
      },
      {
        command: "go test ./...",
        outcome: "unknown",
        note: "no result recorded (the agent was stopped?)",
        source: "agent",
      },
    ]);
  });

  it("agrees with the command judge: a Bash use appears exactly when its command runs tests, and no outcome without a result", () => {
    const commands = fc.constantFrom(
      "npm test",
      "go test ./...",
      "git log",
      "echo pytest",
      "pnpm test | tail",
      "make check",
      "ls",
    );
    fc.assert(
      fc.property(
        fc.array(fc.record({ command: commands, answered: fc.boolean(), isError: fc.boolean() }), {
          maxLength: 8,
        }),
        (turns) => {
          const stream = turns
            .map((turn, index) =>
              bashTurn(
                `t${index}`,
                turn.command,
                turn.answered ? { text: "out", isError: turn.isError } : undefined,
              ),
            )
            .join("\n");
          const runs = testRunsInStream(stream);
          const expected = turns.filter((turn) => findTestCommand(turn.command));
          expect(runs.map((run) => run.command)).toEqual(expected.map((turn) => turn.command));
          runs.forEach((run, index) => {
            const turn = expected[index] as (typeof expected)[number];
            if (!turn.answered || !findTestCommand(turn.command)?.statusIsTests)
              expect(run.outcome).toBe("unknown");
            else expect(run.outcome).toBe(turn.isError ? "failed" : "passed");
          });
        },
      ),
    );
  });
});

describe("test runs a report names", () => {
  it("takes the outcome only where the agent says it, and reads only the agent's sections", () => {
    const report = [
      "---",
      "dispatch_id: d",
      "error: pnpm test failed",
      "---",
      "",
      "# Run npm test and fix it",
      "",
      "## What shipped",
      "",
      "- Fixed the parser; `pnpm test` passes",
      "- `go test ./...` fails on the old fixture",
      "- Ran `cargo test`",
      "## Needs human judgment",
      "",
      "Nothing flagged.",
    ].join("\n");
    expect(testRunsInReport(report)).toEqual([
      { command: "pnpm test", outcome: "passed", source: "report" },
      { command: "go test ./...", outcome: "failed", source: "report" },
      { command: "cargo test", outcome: "unknown", source: "report" },
    ]);
  });
});

describe("the tests a real Claude Code run made, on the page", () => {
  let world: GstackWorld;
  beforeAll(async () => {
    world = await makeGstackWorld();
  });
  afterAll(async () => {
    await world?.remove();
  });

  it("a passing, a failing and a refused test run are listed with what is known of each", async () => {
    const id = "dispatch-20261127T090000-7e570000";
    const packageJson = (code: number) =>
      JSON.stringify({
        name: "acme-widget",
        private: true,
        scripts: { test: `node -e "process.exit(${code})"`, "test:slow": "node -e 0" },
      });
    const coding = await startCodingDaemon(world, [
      scripted.write("package.json", packageJson(0)),
      scripted.bash("npm test"),
      scripted.write("package.json", packageJson(3)),
      scripted.bash("npm test"),
      // Not among the commands the daemon grants: Claude Code refuses it before it runs.
      scripted.bash("npm run test:slow"),
      scripted.text("Ran them.\n## What shipped\n- `npm test` passes\n## Needs human judgment\n- none"),
    ]);
    try {
      await submitDispatch(world.layout, {
        id,
        dispatched_by: "test",
        task: "Run the tests",
        project: "acme-widget",
        project_dir: world.repo,
      });
      await waitFor(
        () => stat(world.layout.dispatch.completedJson(id)).catch(() => undefined),
        120_000,
        `the completion of ${id}`,
      );
    } finally {
      await coding.stop();
    }
    const view = await readDispatchView(world.layout, id);
    expect(view?.tests).toEqual([
      { command: "npm test", outcome: "passed", exitCode: 0, source: "agent" },
      { command: "npm test", outcome: "failed", exitCode: 3, source: "agent" },
      {
        command: "npm run test:slow",
        outcome: "unknown",
        note: "not run: the command was refused",
        source: "agent",
      },
      { command: "npm test", outcome: "passed", source: "report" },
    ]);
    const html = renderDispatchPage(view as NonNullable<typeof view>, {
      action: "/a",
      csrf: "c",
      key: "k0000000",
      tail: "/t",
      nonce: "n",
    });
    expect(html).toContain(`<code>npm test</code> <strong class="wait">failed, exit 3</strong>`);
    expect(html).toContain(`<code>npm run test:slow</code> <strong class="muted">unknown</strong>`);
  });
});

import { execFile } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";
import { MAX_BUDGET_USD, parseValue } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeWorld, type TestWorld } from "../test-support";
import { budgetFromFlag, dispatchFromFlags, slugOf } from "./dispatch-from-flags";

const cli = join(import.meta.dirname, "..", "cli.ts");
// Resolved here, since the command runs in other folders (the current folder is the default project).
const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
let world: TestWorld;

beforeEach(async () => {
  world = await makeWorld();
});

afterEach(async () => {
  await world.cleanup();
});

function runCli(args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      ["--import", tsxLoader, cli, ...args],
      { cwd, env: { ...process.env, PATH: "/usr/bin:/bin", NO_COLOR: "1" } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

describe("gstack-dispatch submit with flags", { timeout: 60_000 }, () => {
  it("prints the dispatch the flags describe, for the current folder by default", async () => {
    const result = await runCli(
      [
        "submit",
        "--task",
        "Add a CHANGELOG entry",
        "--agent",
        "codex",
        "--branch",
        "docs",
        "--print",
        "--root",
        world.root,
      ],
      world.repo,
    );
    expect(result.stderr).toBe("");
    const dispatch = parseValue("dispatch", JSON.parse(result.stdout));
    expect(dispatch).toMatchObject({
      task: "Add a CHANGELOG entry",
      project_dir: world.repo,
      project: slugOf(world.repo),
      target_agent: "codex",
      branch: "docs",
      dispatched_by: "gstack-dispatch",
    });
    expect(dispatch.id).toMatch(/^dispatch-\d{8}-\d{6}-[0-9a-f]{8}$/);
  });

  it("hands it to the daemon's folder when no daemon runs, as a file would be", async () => {
    const result = await runCli(
      [
        "submit",
        "--task",
        "Fix the flaky test",
        "--project-dir",
        world.repo,
        "--project",
        "acme",
        "--root",
        world.root,
      ],
      world.base,
    );
    expect(result.code).toBe(0);
    const id = /submitted (dispatch-\S+)/.exec(result.stdout)?.[1];
    const files = await readdir(world.layout.dispatch.incoming);
    expect(files).toContain(`${id}.json`);
    const written = parseValue(
      "dispatch",
      JSON.parse(await readFile(join(world.layout.dispatch.incoming, `${id}.json`), "utf8")),
    );
    expect(written).toMatchObject({ task: "Fix the flaky test", project: "acme", project_dir: world.repo });
  });

  it("refuses a file and --task together, and neither, in one line", async () => {
    const both = await runCli(["submit", "x.json", "--task", "y", "--root", world.root], world.base);
    expect(both.code).toBe(1);
    expect(both.stderr.trim()).toBe("gstack-dispatch: give a dispatch file or --task, not both");
    const neither = await runCli(["submit", "--root", world.root], world.base);
    expect(neither.code).toBe(1);
    expect(neither.stderr).toContain("describe the work with --task");
  });

  it("names the field and rule when a flag breaks the dispatch contract", async () => {
    const result = await runCli(
      ["submit", "--task", "x", "--agent", "emacs", "--print", "--root", world.root],
      world.repo,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^gstack-dispatch: the command line: invalid dispatch; - target_agent: must be one of .*\[invalid_value\]$/m,
    );
  });
});

describe("gstack-dispatch submit --budget", { timeout: 60_000 }, () => {
  it("sets the dispatch's spend cap", async () => {
    const result = await runCli(
      ["submit", "--task", "Tidy the docs", "--budget", "2.50", "--print", "--root", world.root],
      world.repo,
    );
    expect(result.stderr).toBe("");
    expect(parseValue("dispatch", JSON.parse(result.stdout)).budget_usd).toBe(2.5);
  });

  it.each(["0", "-3", "abc", "1e3", "10000.01", "", "5usd"])(
    "refuses %j in one line naming the flag and the rule",
    async (budget) => {
      const result = await runCli(
        ["submit", "--task", "x", `--budget=${budget}`, "--print", "--root", world.root],
        world.repo,
      );
      expect(result.code).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr).toBe(
        `gstack-dispatch: --budget must be a number of US dollars more than 0 and at most 10000, got ${JSON.stringify(budget)}\n`,
      );
    },
  );
});

describe("budgetFromFlag", () => {
  it("takes plain numbers from more than zero up to the contract's largest", () => {
    expect(budgetFromFlag("0.01")).toBe(0.01);
    expect(budgetFromFlag(" 5 ")).toBe(5);
    expect(budgetFromFlag(".5")).toBe(0.5);
    expect(budgetFromFlag(String(MAX_BUDGET_USD))).toBe(MAX_BUDGET_USD);
    expect(() => budgetFromFlag("Infinity")).toThrow(/--budget must be/);
    expect(() => budgetFromFlag("0x10")).toThrow(/--budget must be/);
  });
});

describe("dispatchFromFlags", () => {
  it("makes a project slug from any folder name", () => {
    expect(slugOf("/home/ada/My Project (old)")).toBe("My-Project-old");
    expect(slugOf("/")).toBe("project");
    expect(
      basename(dispatchFromFlags({ task: "t" }, { cwd: "/srv/acme-widget" }).project_dir as string),
    ).toBe("acme-widget");
  });
});

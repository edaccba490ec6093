import { execFile } from "node:child_process";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { MAX_BUDGET_USD, parseValue } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import { dispatchCommand, makeWorld, type TestWorld } from "../test-support";
import {
  budgetFromFlag,
  dispatchFromFlags,
  dispatchModes,
  modeFromFlag,
  slugOf,
} from "./dispatch-from-flags";

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
      [...dispatchCommand(), ...args],
      { cwd, env: { ...process.env, PATH: "/usr/bin:/bin", NO_COLOR: "1" } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

describe("gstack-dispatch submit with flags", { timeout: loadBudget(60_000) }, () => {
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

  it("refuses no dispatch at all, and a missing file, in one line", async () => {
    const neither = await runCli(["submit", "--root", world.root], world.base);
    expect(neither.code).toBe(1);
    expect(neither.stderr).toContain("describe the work with --task");
    const missing = await runCli(["submit", "x.json", "--task", "y", "--root", world.root], world.base);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe("gstack-dispatch: x.json: no such file\n");
  });

  it("names the field and rule when a flag breaks the dispatch contract", async () => {
    const result = await runCli(
      ["submit", "--task", "x", "--agent", "Emacs", "--print", "--root", world.root],
      world.repo,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^gstack-dispatch: the command line: invalid dispatch; - target_agent: must be an agent name: .*\[format:regex\]$/m,
    );
  });
});

describe("gstack-dispatch submit --budget", { timeout: loadBudget(60_000) }, () => {
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

describe("gstack-dispatch submit --mode", { timeout: loadBudget(60_000) }, () => {
  it.each(["plan", "execute"])("sets the dispatch's mode to %s", async (mode) => {
    const result = await runCli(
      ["submit", "--task", "Plan the migration", "--mode", mode, "--print", "--root", world.root],
      world.repo,
    );
    expect(result.stderr).toBe("");
    expect(parseValue("dispatch", JSON.parse(result.stdout)).mode).toBe(mode);
  });

  it("leaves the mode out when not given, so the daemon's own policy decides", async () => {
    const result = await runCli(["submit", "--task", "x", "--print", "--root", world.root], world.repo);
    expect(result.stderr).toBe("");
    expect(JSON.parse(result.stdout)).not.toHaveProperty("mode");
  });

  it.each(["Plan", "review", "", "plan,execute"])(
    "refuses %j in one line naming the flag and the values it takes",
    async (mode) => {
      const result = await runCli(
        ["submit", "--task", "x", `--mode=${mode}`, "--print", "--root", world.root],
        world.repo,
      );
      expect(result.code).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr).toBe(
        `gstack-dispatch: --mode must be execute or plan, got ${JSON.stringify(mode)}\n`,
      );
    },
  );

  it("takes the values from the dispatch contract", () => {
    expect([...dispatchModes()].sort()).toEqual(["execute", "plan"]);
    expect(modeFromFlag("plan")).toBe("plan");
  });
});

describe("gstack-dispatch submit <file> with flags", { timeout: loadBudget(60_000) }, () => {
  async function writeDispatchFile(extra: Record<string, unknown> = {}): Promise<string> {
    const file = join(world.base, "saved.json");
    await writeFile(
      file,
      JSON.stringify({
        id: "dispatch-saved-template",
        dispatched_by: "wintermute",
        task: "Review the open pull requests",
        project: "acme-widget",
        project_dir: world.repo,
        target_agent: "codex",
        mode: "execute",
        budget_usd: 1,
        learnings: ["The widget uses tabs"],
        ...extra,
      }),
    );
    return file;
  }

  it("replaces the fields the flags name and keeps the file's others", async () => {
    const file = await writeDispatchFile({ source_signature: "0".repeat(64) });
    const result = await runCli(
      [
        "submit",
        file,
        "--mode",
        "plan",
        "--budget",
        "3",
        "--task",
        "Review only the security pull requests",
        "--print",
        "--root",
        world.root,
      ],
      world.base,
    );
    expect(result.stderr).toBe("");
    expect(parseValue("dispatch", JSON.parse(result.stdout))).toMatchObject({
      id: "dispatch-saved-template",
      dispatched_by: "wintermute",
      task: "Review only the security pull requests",
      project: "acme-widget",
      project_dir: world.repo,
      target_agent: "codex",
      mode: "plan",
      budget_usd: 3,
      learnings: ["The widget uses tabs"],
    });
    expect(JSON.parse(result.stdout)).not.toHaveProperty("source_signature");
  });

  it("hands the changed dispatch over and says which fields came from the command line", async () => {
    const file = await writeDispatchFile({
      project_dir: join(world.base, "old-checkout"),
      source_signature: "0".repeat(64),
    });
    const result = await runCli(
      ["submit", file, "--mode", "plan", "--project-dir", basename(world.repo), "--root", world.root],
      world.base,
    );
    expect(result.stderr).toBe("");
    expect(result.stdout).toMatch(
      /^submitted dispatch-saved-template → \S+dispatch-saved-template\.json; project_dir, mode from the command line\n$/,
    );
    const written = JSON.parse(
      await readFile(join(world.layout.dispatch.incoming, "dispatch-saved-template.json"), "utf8"),
    ) as Record<string, unknown>;
    expect(written).toMatchObject({ mode: "plan", project_dir: world.repo });
    // The file's signature covered the fields before the change: it is not passed on.
    expect(written).not.toHaveProperty("source_signature");
    // The file itself is left as it was.
    expect(JSON.parse(await readFile(file, "utf8"))).toMatchObject({ mode: "execute" });
  });

  it("names the file and the rule when a flag makes the dispatch invalid", async () => {
    const file = await writeDispatchFile();
    const result = await runCli(
      ["submit", file, "--agent", "Emacs", "--print", "--root", world.root],
      world.base,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^gstack-dispatch: .*saved\.json with the command line's target_agent: invalid dispatch; - target_agent: must be an agent name/,
    );
  });

  it("checks a flag's own rule before reading the file", async () => {
    const result = await runCli(
      ["submit", "missing.json", "--mode", "later", "--root", world.root],
      world.base,
    );
    expect(result.stderr).toBe('gstack-dispatch: --mode must be execute or plan, got "later"\n');
  });
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

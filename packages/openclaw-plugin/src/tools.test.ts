import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCancelTool } from "./cancel-tool";
import { completionMessage } from "./completion-message";
import { deliveredLedger } from "./delivered-ledger";
import { runDispatchTool } from "./dispatch-tool";
import { type GstackWorld, makeGstackWorld } from "./openclaw-world";
import { type PluginSettings, resolvePluginSettings } from "./plugin-settings";
import { renderReport, runReportTool } from "./report-tool";
import { runStatusTool } from "./status-tool";

let world: GstackWorld;
let settings: PluginSettings;
let openclawState: string;
const session = { sessionKey: "agent:main:main", agentId: "main" };

beforeEach(async () => {
  world = await makeGstackWorld();
  openclawState = await mkdtemp(join(tmpdir(), "openclaw-state-"));
  settings = resolvePluginSettings({ gstackHome: world.root }, openclawState);
});

afterEach(async () => {
  await world.remove();
  await rm(openclawState, { recursive: true, force: true });
});

const textOf = (result: { content: { text: string }[] }) => result.content[0]?.text ?? "";

describe("gstack_dispatch", () => {
  it("writes a valid dispatch with reply_to and says the daemon is not running", async () => {
    const result = await runDispatchTool(settings, session, {
      task: "Add a file",
      project: "acme-widget",
      project_dir: world.repo,
    });
    expect(result.details.ok).toBe(true);
    expect(textOf(result)).toContain("not running");
    const written = JSON.parse(await readFile(String(result.details.path), "utf8"));
    expect(written.reply_to).toEqual({
      runtime: "openclaw",
      session_key: "agent:main:main",
      agent_id: "main",
    });
  });

  it("refuses unknown parameters in one sentence naming them", async () => {
    const result = await runDispatchTool(settings, session, {
      task: "x",
      project: "acme-widget",
      project_dir: world.repo,
      priority: "high",
    });
    expect(result.details.ok).toBe(false);
    expect(textOf(result)).toMatch(/^gstack_dispatch was not run: .*priority/);
    expect(textOf(result)).not.toContain("\n");
  });

  it("passes an agent name the daemon's config may give (claude-acp) and refuses one no config can", async () => {
    const named = await runDispatchTool(settings, session, {
      task: "Add a file",
      project: "acme-widget",
      project_dir: world.repo,
      target_agent: "claude-acp",
    });
    expect(named.details.ok).toBe(true);
    expect(JSON.parse(await readFile(String(named.details.path), "utf8")).target_agent).toBe("claude-acp");
    const bad = await runDispatchTool(settings, session, {
      task: "Add a file",
      project: "acme-widget",
      project_dir: world.repo,
      target_agent: "Claude ACP",
    });
    expect(bad.details.ok).toBe(false);
    expect(textOf(bad)).toContain("target_agent");
  });

  it("refuses a folder outside trusted_repos and says how to fix it", async () => {
    const result = await runDispatchTool(settings, session, {
      task: "x",
      project: "acme-widget",
      project_dir: tmpdir(),
    });
    expect(result.details.ok).toBe(false);
    expect(textOf(result)).toContain("trusted_repos");
  });

  it("refuses a project slug the contract does not allow", async () => {
    const result = await runDispatchTool(settings, session, {
      task: "x",
      project: "Not A Slug!",
      project_dir: world.repo,
    });
    expect(result.details.ok).toBe(false);
    expect(textOf(result)).toMatch(/^The dispatch was not sent: project /);
  });
});

describe("the other tools", () => {
  it("status reports a stopped daemon, cancel and report refuse unknown ids", async () => {
    expect(textOf(await runStatusTool(settings))).toContain("not running");
    expect(textOf(await runCancelTool(settings, { dispatch_id: "dispatch-nope" }))).toContain("No dispatch");
    expect(textOf(await runCancelTool(settings, { dispatch_id: "nope" }))).toContain("dispatch_id");
    expect(textOf(await runReportTool(settings, { dispatch_id: "dispatch-nope" }))).toContain(
      "no report yet",
    );
  });
});

describe("the delivered-ledger", () => {
  it("records a dispatch once, even when two deliverers race", async () => {
    const ledger = deliveredLedger(settings.stateDir);
    const entry = {
      dispatch_id: "dispatch-race",
      session_key: "agent:main:main",
      via: "callback" as const,
      delivered_at: new Date().toISOString(),
    };
    const outcomes = await Promise.all(Array.from({ length: 8 }, () => ledger.record(entry)));
    expect(outcomes.filter(Boolean)).toHaveLength(1);
    expect(await ledger.has("dispatch-race")).toBe(true);
    expect(await deliveredLedger(settings.stateDir).list()).toEqual(["dispatch-race"]);
  });
});

describe("gstack_report", () => {
  it("renders the report for a person: the frontmatter as plain lines, then the report's Markdown", () => {
    const markdown = [
      "---",
      "dispatch_id: dispatch-r",
      "status: completed",
      "duration: 42",
      "commits: 1",
      "branch: feat/x",
      "cost_usd: 0.125",
      "project: acme-widget",
      "---",
      "",
      "# Add x",
      "",
      "## What shipped",
      "",
      "- x.txt",
    ].join("\n");
    const text = renderReport(markdown, "r.md");
    expect(text).toBe(
      "Status: completed (acme-widget)\nBranch: feat/x\nCommits: 1\nTook: 42s, $0.13\n\n# Add x\n\n## What shipped\n\n- x.txt",
    );
    expect(renderReport("---\nnot: [valid\n---\n# Only the body\n", "r.md")).toBe("# Only the body");
  });
});

describe("the completion message", () => {
  it("carries status, what shipped, commits, judgment items, and for a failure what to do", () => {
    const report =
      "---\n---\n# t\n\n## What shipped\n\n- a.txt\n\n## Needs human judgment\n\n- Pick a name\n";
    const done = completionMessage({
      completion: { dispatch_id: "dispatch-a", status: "completed", duration: 1, commits: 2, pr: "acme/w#4" },
      reportMarkdown: report,
    });
    expect(done).toContain("gstack dispatch dispatch-a finished.");
    expect(done).toContain("What shipped:\n- a.txt");
    expect(done).toContain("PR: acme/w#4\nCommits: 2\nTook: 1s");
    expect(done).toContain("Needs your judgment:\n- Pick a name");
    expect(done).toContain("Full report: gstack_report with dispatch_id dispatch-a.");
    expect(done.split("\n").at(-1)).toBe("(report key gstack:dispatch-a:completed)");
    expect(done).not.toContain("---");
    const failed = completionMessage({
      completion: {
        dispatch_id: "dispatch-b",
        status: "failed",
        duration: 1,
        error: "429",
        error_kind: "rate_limit",
      },
    });
    expect(failed).toContain("gstack dispatch dispatch-b failed.");
    expect(failed).toContain("Error (rate_limit): 429. What to do: the model provider rate-limited");
    const overBudget = completionMessage({
      completion: {
        dispatch_id: "dispatch-c",
        status: "failed",
        duration: 1,
        commits: 0,
        error: "Spent $1.21: the agent reached its budget without finishing",
        error_kind: "budget_exhausted",
        cost_usd: 1.214,
        budget_usd: 1,
      },
    });
    expect(overBudget).toContain("Commits: 0");
    expect(overBudget).toContain("Took: 1s, $1.21 of a $1.00 budget");
    expect(overBudget).toContain("Error (budget_exhausted): Spent $1.21");
    expect(overBudget).toContain("What to do: it spent its budget");
  });
});

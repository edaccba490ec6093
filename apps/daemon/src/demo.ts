import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { gstackLayout, isoWeekOf, openClawLayout } from "@gstack/contracts";
import { DaemonError, submitDispatch } from "@gstack/daemon-client";
import { Daemon } from "./daemon";

/** Finds the Claude Code CLI installed with this package (or on PATH as a last resort). */
export function findClaudeBinary(): string {
  const require = createRequire(import.meta.url);
  try {
    const manifest = require.resolve("@anthropic-ai/claude-code/package.json");
    const packaged = join(dirname(manifest), "bin", "claude.exe");
    if (existsSync(packaged)) return packaged;
  } catch {}
  const local = join(import.meta.dirname, "..", "node_modules", ".bin", "claude");
  return existsSync(local) ? local : "claude";
}

const FINAL_MESSAGE = [
  "I added a CONTRIBUTING.md that explains how to run the tests, and committed it.",
  "",
  "## What shipped",
  "- CONTRIBUTING.md: how to set up, run the tests and send a change",
  "",
  "## Decisions made",
  "- Kept it short and linked the README instead of repeating it",
  "",
  "## Learnings logged",
  "- tool: The widget project runs its tests with `node --test`",
  "- architecture: Documentation lives at the repository root, not in docs/",
  "",
  "## Needs human judgment",
  "- Should outside contributors sign a CLA? The guide does not mention one.",
].join("\n");

const CONTRIBUTING = `# Contributing to widget

1. Install Node.js 22 or newer.
2. Run the tests: \`node --test\`.
3. Open a pull request against \`main\` with one change per commit.
`;

function rule(title: string): string {
  const line = `── ${title} ${"─".repeat(Math.max(4, 72 - title.length))}`;
  return process.stdout.isTTY ? `\n\x1b[1m${line}\x1b[0m\n` : `\n${line}\n`;
}

/**
 * Runs one dispatch end to end, offline: a temporary state root, the daemon in local-only
 * mode, the real Claude Code CLI answered by a scripted model, a scratch git repository.
 * Prints what a person would look at afterwards. Resolves true when the dispatch ended
 * completed with one commit.
 */
export async function runDemo(options: { keep: boolean; out: (text: string) => void }): Promise<boolean> {
  const { out } = options;
  let scriptedModule: typeof import("@gstack/scripted-model");
  try {
    scriptedModule = await import("@gstack/scripted-model");
  } catch {
    throw new DaemonError(
      "the demo needs @gstack/scripted-model; run it from the gstack-openclaw repository (./dev demo)",
    );
  }
  const { scripted, startScriptedModel } = scriptedModule;
  const base = await mkdtemp(join(tmpdir(), "gstack-dispatch-demo-"));
  const root = join(base, "gstack");
  const repo = join(base, "widget");
  const claudeHome = join(base, "claude-home");
  const workspace = join(base, "openclaw-workspace");
  const layout = gstackLayout(root);
  await mkdir(claudeHome, { recursive: true });
  await mkdir(workspace, { recursive: true });
  await mkdir(repo, { recursive: true });
  const git = (...args: string[]) => execFileSync("git", ["-C", repo, ...args], { encoding: "utf8" });
  git("init", "-q", "-b", "main");
  git("config", "user.name", "gstack demo agent");
  git("config", "user.email", "demo@gstack.invalid");
  await writeFile(join(repo, "README.md"), "# widget\n\nA small widget library.\n");
  git("add", "README.md");
  git("commit", "-q", "-m", "Initial commit");
  await mkdir(root, { recursive: true });
  await writeFile(layout.config, `dispatch:\n  max_concurrent: 2\n  trusted_repos:\n    - ${base}\n`);

  const model = await startScriptedModel({
    script: [
      scripted.write("CONTRIBUTING.md", CONTRIBUTING),
      scripted.bash("git add CONTRIBUTING.md"),
      scripted.bash("git commit -m 'Add a contributing guide'"),
      scripted.text(FINAL_MESSAGE),
    ],
  });
  const claude = findClaudeBinary();
  out(rule("gstack-dispatch demo (offline)"));
  out(`state root      ${root}\n`);
  out(`project         ${repo} (a scratch git repository)\n`);
  out(`coding agent    the real Claude Code CLI: ${claude}\n`);
  out(`model           SCRIPTED MODEL at ${model.url}: a local stand-in for the Anthropic API that\n`);
  out("                replays a fixed script. No model thinks here; the CLI, its tools, git and the\n");
  out("                daemon are all real.\n");
  out(rule("daemon log"));
  const daemon = new Daemon({
    root,
    claudeBinary: claude,
    agentEnv: { ...model.claudeEnv(claudeHome), CLAUDE_CODE_MAX_RETRIES: "0" },
    openclawWorkspace: workspace,
    log: (line) => out(`  ${new Date().toISOString().slice(11, 19)}  ${line}\n`),
  });
  let ok = false;
  try {
    await daemon.start();
    const { dispatch } = await submitDispatch(layout, {
      id: "dispatch-demo-contributing-guide",
      dispatched_by: "wintermute",
      task: "Add a CONTRIBUTING.md that explains how to run the tests",
      project: "acme-widget",
      project_dir: repo,
      learnings: ["The widget project is a small Node.js library"],
      constraints: ["Keep it under one page"],
      ttl_seconds: 3600,
    });
    const deadline = Date.now() + 120_000;
    while (!existsSync(layout.dispatch.completedJson(dispatch.id))) {
      if (Date.now() > deadline) throw new DaemonError("the demo dispatch did not finish within 2 minutes");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await daemon.idle();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const completion = JSON.parse(await readFile(layout.dispatch.completedJson(dispatch.id), "utf8")) as {
      status: string;
      commits?: number;
    };
    out(rule(`completion report  ${layout.dispatch.completedReport(dispatch.id)}`));
    out(await readFile(layout.dispatch.completedReport(dispatch.id), "utf8"));
    out(rule("the commit, in the project's git log"));
    out(git("log", "--stat", "-1", "--format=%h %s%n%an <%ae>"));
    out(rule(`activity entry  ${layout.activity.week(isoWeekOf(new Date()))}`));
    const activity =
      (await readFile(layout.activity.week(isoWeekOf(new Date())), "utf8")).trim().split("\n").pop() ?? "";
    out(`${JSON.stringify(JSON.parse(activity), null, 2)}\n`);
    const learningsPath = layout.project("acme-widget").learnings;
    out(rule(`learnings  ${learningsPath}`));
    const learningLines = existsSync(learningsPath)
      ? (await readFile(learningsPath, "utf8")).trim().split("\n")
      : [];
    for (const line of learningLines) {
      const learning = JSON.parse(line) as {
        type: string;
        key: string;
        insight: string;
        confidence: number;
        origin: string;
      };
      out(
        `  • [${learning.type}] ${learning.insight}\n    key ${learning.key}, confidence ${learning.confidence}, from ${learning.origin}\n`,
      );
    }
    if (learningLines.length === 0) out("(none)\n");
    const memoryFile = openClawLayout(workspace).gstackMemory("acme-widget");
    out(rule(`OpenClaw memory  ${memoryFile}`));
    out(existsSync(memoryFile) ? await readFile(memoryFile, "utf8") : "(not written)\n");
    ok = completion.status === "completed" && completion.commits === 1;
    out(rule(ok ? "result: completed with 1 commit" : `result: ${completion.status}`));
  } finally {
    await daemon.stop(0);
    await model.close();
    if (options.keep) out(`kept ${base}\n`);
    else await rm(base, { recursive: true, force: true });
  }
  return ok;
}

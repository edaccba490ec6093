import { execFileSync } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openclawVersion } from "@gstack/openclaw-testbed";
import { scripted, startScriptedModel } from "@gstack/scripted-model";
import { Daemon } from "../../../apps/daemon/src/index";
import { DISPATCH_MARKER, newestUserText, openclawAgentResponder, TOOL_MARKER } from "./openclaw-scripts";
import {
  agentTurn,
  installPlugin,
  makeGstackWorld,
  makeOpenClawHome,
  packPlugin,
  pluginPackageDir,
  scriptedOpenClawConfig,
  startOpenClawGateway,
} from "./openclaw-world";

/**
 * The whole loop offline: the real OpenClaw gateway with this plugin installed from its
 * tarball, its agent (a scripted model) dispatching a plan-first task, the gstack daemon running
 * the real Claude Code CLI (a second scripted model) read-only until its plan arrives in the
 * OpenClaw session that asked, the user approving it there (the agent calls gstack_answer), the
 * same Claude Code session resuming and committing on a branch of its own, the report arriving
 * in the session, and the agent landing the branch with gstack_land when the user says so.
 */
const say = (line: string) => process.stdout.write(`${line}\n`);
const claude = join(pluginPackageDir, "..", "..", "apps", "daemon", "node_modules", ".bin", "claude");

async function main(): Promise<void> {
  await stat(join(pluginPackageDir, "dist", "index.js")).catch(() => {
    throw new Error("build first: ./dev demo builds everything, or pnpm run build");
  });
  const scratch = await mkdtemp(join(tmpdir(), "gstack-demo-"));
  const world = await makeGstackWorld();
  const openclawModel = await startScriptedModel({ respond: openclawAgentResponder });
  const coder = await startScriptedModel({
    script: [
      scripted.text(
        "## Plan\n1. Add GREETING.md with one friendly heading.\n2. Commit it on the dispatch's branch.",
      ),
      scripted.write("GREETING.md", "# Hello from gstack\n"),
      scripted.bash("git add GREETING.md"),
      scripted.bash("git commit -m 'Add GREETING.md'"),
      scripted.text(
        "Done.\n## What shipped\n- GREETING.md with a greeting\n## Decisions made\n- Markdown, one heading\n## Learnings logged\n- tool: This repo commits without hooks\n## Needs human judgment\n- Is the greeting friendly enough?",
      ),
    ],
  });
  /** The newest text given to OpenClaw's agent that matches `pattern`, waited for up to 3 minutes. */
  const sessionText = (pattern: RegExp) =>
    waitUntil(
      async () =>
        openclawModel
          .agentRequests()
          .map(newestUserText)
          .find((text) => pattern.test(text)),
      180_000,
    );
  const showFrom = (text: string) => {
    for (const line of text.slice(text.indexOf("gstack dispatch")).split("\n")) say(`   | ${line}`);
  };
  const home = await makeOpenClawHome(scriptedOpenClawConfig(openclawModel, { gstackHome: world.root }));
  const coderHome = await mkdtemp(join(tmpdir(), "gstack-demo-coder-"));
  let gateway: Awaited<ReturnType<typeof startOpenClawGateway>> | undefined;
  let daemon: Daemon | undefined;
  try {
    say(
      "gstack + OpenClaw, offline. Both agents are SCRIPTED MODELS (no real LLM); everything else is real.",
    );
    say(
      `1. Packing @gstack/openclaw-plugin and installing it into OpenClaw ${openclawVersion} (openclaw plugins install)`,
    );
    await installPlugin(home, await packPlugin(join(scratch, "pack")));
    gateway = await startOpenClawGateway({ home: home.home });
    say(`2. OpenClaw gateway up on ${gateway.url} in ${(gateway.startupMs / 1000).toFixed(1)} s`);
    daemon = new Daemon({
      root: world.root,
      openclawWorkspace: false,
      claudeBinary: claude,
      agentEnv: { ...coder.claudeEnv(coderHome), CLAUDE_CODE_MAX_RETRIES: "0" },
      settings: { trusted_repos: [world.base] },
    });
    await daemon.start();
    say(`3. gstack daemon running on ${world.root}, trusting ${world.base}`);
    const args = {
      task: "Add GREETING.md with a friendly greeting and commit it",
      project: "acme-widget",
      project_dir: world.repo,
      mode: "plan",
    };
    say(`4. User to OpenClaw: "${args.task}; show me the plan first"`);
    await agentTurn(gateway, "agent:main:main", `${args.task}. ${DISPATCH_MARKER}${JSON.stringify(args)}`);
    const dispatched = (await readdir(world.layout.dispatch.incoming).catch(() => [] as string[])).filter(
      (name) => name.endsWith(".json") && !name.startsWith("."),
    ).length;
    say(
      `   OpenClaw's agent called gstack_dispatch${dispatched ? "" : " (the daemon already took the file)"}`,
    );
    say(
      "5. The daemon runs the real Claude Code CLI in plan mode (read-only); waiting for the plan to reach the OpenClaw session…",
    );
    const plan = await sessionText(/gstack dispatch \S+ (\([^)]*\) )?has a plan and waits/);
    if (!plan) throw new Error("the plan did not reach the OpenClaw session in time");
    say("   In the OpenClaw session, the agent's next model request carried:");
    showFrom(plan);
    const id = /gstack dispatch (\S+)/.exec(plan)?.[1] ?? "";
    say(`6. User to OpenClaw: "Good plan, go ahead."`);
    await agentTurn(
      gateway,
      "agent:main:main",
      `Good plan, go ahead. ${TOOL_MARKER}${JSON.stringify({ id: "gstack_answer", args: { dispatch_id: id, answer: "approve", round: 1 } })}`,
    );
    say(
      "   OpenClaw's agent called gstack_answer; the daemon resumes the same Claude Code session (--resume), now allowed to edit…",
    );
    const arrived = await sessionText(/gstack dispatch \S+ (\([^)]*\) )?finished\./);
    if (!arrived) throw new Error("the completion did not reach the OpenClaw session in time");
    say("   The final report reached the session:");
    showFrom(arrived);
    const git = (...args: string[]) =>
      execFileSync("git", ["-C", world.repo, ...args], { encoding: "utf8" }).trim();
    say(`7. Claude Code committed on its own branch, in a worktree; the checkout is untouched:`);
    say(`   gstack/${id}: ${git("log", "--oneline", "-1", `gstack/${id}`)}`);
    say(`   main:        ${git("log", "--oneline", "-1", "main")}`);
    say(
      `   GREETING.md in the checkout: ${(await stat(join(world.repo, "GREETING.md")).catch(() => undefined)) ? "yes" : "not yet"}`,
    );
    say(`8. User to OpenClaw: "Looks good, land it."`);
    await agentTurn(
      gateway,
      "agent:main:main",
      `Looks good, land it. ${TOOL_MARKER}${JSON.stringify({ id: "gstack_land", args: { dispatch_id: id, action: "land" } })}`,
    );
    const landed = await waitUntil(async () => {
      const completion = JSON.parse(await readFile(world.layout.dispatch.completedJson(id), "utf8")) as {
        landing?: string;
      };
      return completion.landing === "landed" ? completion : undefined;
    }, 60_000);
    if (!landed) throw new Error("the agent's gstack_land call did not land the branch in time");
    say("   OpenClaw's agent called gstack_land; the branch is in main now:");
    say(`   main: ${git("log", "--oneline", "-1", "main")}`);
    say(`   GREETING.md: ${(await readFile(join(world.repo, "GREETING.md"), "utf8")).trim()}`);
  } finally {
    await daemon?.stop(0);
    await gateway?.stop();
    await coder.close();
    await openclawModel.close();
    await home.remove();
    await world.remove();
    await rm(coderHome, { recursive: true, force: true });
    await rm(scratch, { recursive: true, force: true });
  }
}

async function waitUntil<T>(check: () => Promise<T | undefined>, timeoutMs: number): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return undefined;
}

main().catch((error: unknown) => {
  process.stderr.write(`demo failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});

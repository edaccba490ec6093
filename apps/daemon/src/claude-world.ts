import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ScriptedModel, startScriptedModel } from "@gstack/scripted-model";
import { Daemon, type DaemonOptions } from "./daemon";
import { makeWorld, type TestWorld } from "./test-support";

/** The real Claude Code CLI installed as this package's devDependency. */
export const CLAUDE_BINARY = join(import.meta.dirname, "..", "node_modules", ".bin", "claude");

/**
 * A test world in which the daemon runs the real Claude Code CLI against a scripted local
 * Messages API: a trusted scratch repository with a committer identity, a HOME of its own for
 * Claude Code, and the model and daemon the test started, all torn down by `cleanup`.
 */
export interface ClaudeWorld extends TestWorld {
  /** The HOME Claude Code runs with (its settings and session files). */
  home: string;
  model?: ScriptedModel;
  daemon?: Daemon;
  /** `git -C <repo> …`, trimmed output. */
  git(...args: string[]): string;
  /**
   * Starts the scripted model (unless one is running and no script is given: a daemon restarted
   * in a test keeps talking to the same model) and a daemon running Claude Code against it.
   */
  start(
    script?: Parameters<typeof startScriptedModel>[0],
    settings?: Record<string, unknown>,
    options?: Partial<DaemonOptions>,
  ): Promise<Daemon>;
  /** Stops the daemon (leaving the model running), as a restart does. */
  stopDaemon(): Promise<void>;
}

export async function makeClaudeWorld(): Promise<ClaudeWorld> {
  const world = await makeWorld();
  const git = (...args: string[]) =>
    execFileSync("git", ["-C", world.repo, ...args], { encoding: "utf8" }).trim();
  git("config", "user.name", "Scripted Agent");
  git("config", "user.email", "agent@example.invalid");
  const home = await mkdtemp(join(tmpdir(), "gstack-claude-home-"));
  const claudeWorld: ClaudeWorld = {
    ...world,
    home,
    git,
    async start(script, settings = {}, options = {}) {
      if (script !== undefined) {
        await claudeWorld.model?.close();
        claudeWorld.model = await startScriptedModel(script);
      }
      const model = claudeWorld.model;
      if (!model) throw new Error("start the world with a script before restarting its daemon");
      const daemon = new Daemon({
        openclawWorkspace: false,
        root: world.root,
        claudeBinary: CLAUDE_BINARY,
        agentEnv: { ...model.claudeEnv(home), CLAUDE_CODE_MAX_RETRIES: "0" },
        retryDelayMs: { rateLimit: 100, other: 100 },
        ...options,
        settings: { trusted_repos: [world.base], ...settings },
      });
      claudeWorld.daemon = daemon;
      await daemon.start();
      return daemon;
    },
    async stopDaemon() {
      await claudeWorld.daemon?.stop(0);
      claudeWorld.daemon = undefined;
    },
    async cleanup() {
      await claudeWorld.stopDaemon();
      await claudeWorld.model?.close();
      claudeWorld.model = undefined;
      await rm(home, { recursive: true, force: true });
      await world.cleanup();
    },
  };
  return claudeWorld;
}

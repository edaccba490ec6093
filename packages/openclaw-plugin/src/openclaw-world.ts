import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { type GstackLayout, gstackLayout } from "@gstack/contracts";
import {
  makeOpenClawHome,
  type OpenClawGateway,
  type OpenClawHome,
  runOpenClaw,
  startOpenClawGateway,
} from "@gstack/openclaw-testbed";
import type { ScriptedModel } from "@gstack/scripted-model";

const run = promisify(execFile);

/** This package's folder (where `pnpm pack` runs). */
export const pluginPackageDir = join(import.meta.dirname, "..");

/**
 * Packs this package the way it is published (`pnpm pack`) and returns the tarball path.
 * The package must be built first.
 */
export async function packPlugin(destination: string): Promise<string> {
  await mkdir(destination, { recursive: true });
  await run("pnpm", ["pack", "--pack-destination", destination], { cwd: pluginPackageDir });
  const tarball = (await readdir(destination)).find((name) => name.endsWith(".tgz"));
  if (!tarball) throw new Error(`pnpm pack left no tarball in ${destination}`);
  return join(destination, tarball);
}

/** A gstack state root with a trusted scratch repository, for the daemon and the plugin. */
export interface GstackWorld {
  base: string;
  root: string;
  layout: GstackLayout;
  repo: string;
  remove(): Promise<void>;
}

export async function makeGstackWorld(): Promise<GstackWorld> {
  const base = await mkdtemp(join(tmpdir(), "gstack-plugin-"));
  const root = join(base, "gstack");
  const repo = join(base, "acme-widget");
  await mkdir(root, { recursive: true });
  await mkdir(repo, { recursive: true });
  await run("git", ["init", "-q", "-b", "main", repo]);
  await run("git", ["-C", repo, "config", "user.name", "Scripted Agent"]);
  await run("git", ["-C", repo, "config", "user.email", "agent@example.invalid"]);
  await writeFile(join(repo, "README.md"), "# acme-widget\n");
  await run("git", ["-C", repo, "add", "README.md"]);
  await run("git", ["-C", repo, "commit", "-q", "-m", "Initial commit"]);
  await writeFile(join(root, "config.yaml"), `dispatch:\n  trusted_repos:\n    - ${base}\n`);
  return {
    base,
    root,
    layout: gstackLayout(root),
    repo,
    remove: () => rm(base, { recursive: true, force: true }),
  };
}

/** The OpenClaw config that points its agent at a scripted model over `anthropic-messages`. */
export function scriptedOpenClawConfig(model: ScriptedModel, pluginConfig: Record<string, unknown>) {
  return {
    models: {
      providers: {
        scripted: {
          baseUrl: model.url,
          api: "anthropic-messages",
          apiKey: "scripted-key",
          models: [
            {
              id: "scripted-model",
              name: "Scripted model (offline)",
              contextWindow: 200_000,
              maxTokens: 8192,
            },
          ],
        },
      },
    },
    agents: { defaults: { model: { primary: "scripted/scripted-model" } } },
    plugins: { entries: { gstack: { enabled: true, config: pluginConfig } } },
  };
}

/**
 * Installs the packed plugin into an OpenClaw home the way a user does
 * (`openclaw plugins install <tarball>`, then `openclaw plugins enable gstack`).
 */
export async function installPlugin(home: OpenClawHome, tarball: string): Promise<void> {
  const install = await runOpenClaw(["plugins", "install", tarball, "--force", "--accept-capabilities"], {
    home: home.home,
  });
  if (install.code !== 0)
    throw new Error(`openclaw plugins install failed:\n${install.stdout}\n${install.stderr}`);
  const enable = await runOpenClaw(["plugins", "enable", "gstack"], { home: home.home });
  if (enable.code !== 0)
    throw new Error(`openclaw plugins enable failed:\n${enable.stdout}\n${enable.stderr}`);
}

/** Runs one agent turn in a session through the gateway (`openclaw agent`). */
export async function agentTurn(
  home: OpenClawHome,
  gateway: OpenClawGateway,
  sessionKey: string,
  message: string,
) {
  return await runOpenClaw(
    ["agent", "--session-key", sessionKey, "--message", message, "--json", "--timeout", "120"],
    {
      home: home.home,
      env: { OPENCLAW_GATEWAY_URL: `ws://127.0.0.1:${gateway.port}`, OPENCLAW_GATEWAY_TOKEN: gateway.token },
      timeoutMs: 180_000,
    },
  );
}

export { makeOpenClawHome, startOpenClawGateway };

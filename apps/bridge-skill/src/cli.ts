import { resolve } from "node:path";
import { ContractError, resolveOpenClawWorkspace } from "@gstack/contracts";
import { startCommand } from "@gstack/contracts/node-support";
import { defineCommand, runMain } from "citty";
import { BridgeSkillError } from "./bridge-skill-error";
import { bridgeSkillPath } from "./bridge-skill-path";
import { installBridgeSkill } from "./install-bridge-skill";

startCommand("gstack-bridge-skill");

function fail(error: unknown): void {
  const message =
    ContractError.isInstance(error) || BridgeSkillError.isInstance(error)
      ? error.message
      : error instanceof Error
        ? error.message
        : String(error);
  process.stderr.write(`gstack-bridge-skill: ${message.replaceAll("\n", " ")}\n`);
  process.exitCode = 1;
}

const install = defineCommand({
  meta: {
    name: "install",
    description: "Install the gstack-bridge skill into an OpenClaw workspace's skills/",
  },
  args: {
    workspace: {
      type: "string",
      description:
        "OpenClaw workspace (default: OPENCLAW_WORKSPACE_DIR, ~/.openclaw-<profile>/workspace or ~/.openclaw/workspace)",
    },
    json: { type: "boolean", description: "Print JSON instead of text", default: false },
  },
  async run({ args }) {
    try {
      const workspace = args.workspace ? resolve(args.workspace) : resolveOpenClawWorkspace(process.env);
      const result = await installBridgeSkill(workspace);
      process.stdout.write(
        args.json
          ? `${JSON.stringify(result, null, 2)}\n`
          : `${result.replaced ? "updated" : "installed"} ${result.path} (${result.files.length} files)\n`,
      );
    } catch (error) {
      fail(error);
    }
  },
});

const path = defineCommand({
  meta: { name: "path", description: "Print the folder of the skill this package ships" },
  run() {
    process.stdout.write(`${bridgeSkillPath}\n`);
  },
});

const main = defineCommand({
  meta: {
    name: "gstack-bridge-skill",
    version: "0.1.0",
    description: "The OpenClaw skill that teaches an agent the gstack protocol",
  },
  subCommands: { install, path },
});

void runMain(main);

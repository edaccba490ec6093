import { lstat, readdir, readFile, readlink, rm, rmdir } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { DaemonError, entryExists } from "@gstack/daemon-client";
import { defineCommand } from "citty";
import { CLAWVISOR_SERVICE_ID } from "../service-api/clawvisor-service";
import { installedPrefix } from "../service-install/installed-package";
import { runStep, stepText } from "../service-install/run-step";
import { deactivationSteps, serviceFiles } from "../service-install/service-files";
import { commandMeta } from "./command-meta";
import { fail, layoutOf, rootArg } from "./common";

/** Commands in `bin` that belong to the installed package: npm's links into it, or the scripts that start it. */
async function commandsOf(bin: string, packageDir: string): Promise<string[]> {
  const names = await readdir(bin).catch(() => [] as string[]);
  const ours: string[] = [];
  for (const name of names.filter((entry) => entry.startsWith("gstack-"))) {
    const path = join(bin, name);
    const info = await lstat(path);
    const points = info.isSymbolicLink()
      ? resolve(bin, await readlink(path))
      : info.isFile() && info.size < 4096
        ? await readFile(path, "utf8")
        : "";
    if (points.includes(packageDir)) ours.push(path);
  }
  return ours;
}

export const uninstall = defineCommand({
  meta: commandMeta.uninstall,
  args: {
    ...rootArg,
    platform: { type: "string", description: "darwin or linux (default: this machine)" },
    purge: {
      type: "boolean",
      description: "also delete the daemon's state (the dispatch/ folder of the state root)",
    },
    "keep-commands": { type: "boolean", description: "remove the service and the plugin only" },
  },
  async run({ args }) {
    try {
      const layout = layoutOf(args);
      const home = process.env.HOME ?? homedir();
      const platform = args.platform ?? process.platform;
      if (platform !== "darwin" && platform !== "linux") {
        throw new DaemonError(`uninstall supports macOS (launchd) and Linux (systemd), not ${platform}`);
      }
      const say = (line: string) => process.stdout.write(`${line}\n`);

      // The service: stop and unload it (each step may fail when it was never loaded), then its files.
      const files = serviceFiles(platform, { ...process.env, HOME: home });
      if (await entryExists(files.unit)) {
        for (const step of deactivationSteps(files, process.getuid?.() ?? 0)) {
          const result = await runStep(step);
          say(result.ok ? `ran: ${stepText(step)}` : `skipped: ${stepText(step)} (${result.cause})`);
        }
      }
      for (const path of [...files.links, files.unit]) {
        if (await entryExists(path)) {
          await rm(path, { force: true });
          say(`removed ${path}`);
        }
      }
      const clawvisor = join(home, ".clawvisor", "local", "services", CLAWVISOR_SERVICE_ID);
      if (await entryExists(clawvisor)) {
        await rm(clawvisor, { recursive: true, force: true });
        say(`removed ${clawvisor}`);
      }

      // The plugin, when OpenClaw is here to ask.
      const openclaw = await runStep({
        program: "openclaw",
        args: ["plugins", "uninstall", "gstack", "--force"],
      });
      if (openclaw.ok) say("removed the gstack plugin from OpenClaw (restart the gateway to unload it)");
      else if (!/not on PATH/.test(openclaw.cause)) say(`OpenClaw kept its gstack plugin: ${openclaw.cause}`);

      // The commands, the Node.js runtime and the tarball `./dev install` put under its prefix.
      const installed = installedPrefix();
      if (!args["keep-commands"] && installed) {
        const paths = [
          ...(await commandsOf(join(installed.prefix, "bin"), installed.packageDir)),
          installed.packageDir,
          installed.runtimeDir,
          installed.shareDir,
        ];
        for (const path of paths) {
          if (!(await entryExists(path))) continue;
          await rm(path, { recursive: true, force: true });
          say(`removed ${path}`);
        }
        await rmdir(dirname(installed.packageDir)).catch(() => {});
      } else if (!args["keep-commands"]) {
        say("the commands run from a checkout, not an installed prefix: nothing to remove there");
      }

      if (args.purge) {
        await rm(layout.dispatch.incoming, { recursive: true, force: true });
        say(`removed ${layout.dispatch.incoming} (the daemon's state)`);
      } else {
        say(
          `kept ${layout.root}: your config, secrets and dispatch history (--purge removes ${layout.dispatch.incoming})`,
        );
      }
    } catch (error) {
      fail(error);
    }
  },
});

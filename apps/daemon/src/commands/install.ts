import { execFile } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { writeFileAtomic } from "@gstack/contracts";
import { DaemonError, loadSettings } from "@gstack/daemon-client";
import { defineCommand } from "citty";
import { CLAWVISOR_SERVICE_ID, renderClawvisorService } from "../service-api/clawvisor-service";
import { activateService } from "../service-install/activate-service";
import { installedCliPath } from "../service-install/installed-package";
import { serviceFiles } from "../service-install/service-files";
import { renderLaunchdPlist, renderSystemdUnit, type ServiceSpec } from "../service-unit";
import { commandMeta } from "./command-meta";
import { fail, layoutOf, rootArg } from "./common";

function execQuiet(program: string, args: string[]): Promise<string | undefined> {
  return new Promise((done) =>
    execFile(program, args, (error, stdout) => done(error ? undefined : stdout.trim())),
  );
}

/** Where clawvisor-local looks for services: `~/.clawvisor/local/services`. */
function clawvisorServicesDir(home: string): string {
  return join(home, ".clawvisor", "local", "services");
}

export const install = defineCommand({
  meta: commandMeta.install,
  args: {
    ...rootArg,
    "dry-run": { type: "boolean", description: "print the file instead of installing it" },
    platform: { type: "string", description: "darwin or linux (default: this machine)" },
    clawvisor: {
      type: "boolean",
      description: "write the gstack-coding service.yaml for clawvisor-local instead",
    },
    "services-dir": {
      type: "string",
      description: "clawvisor-local's services folder (default ~/.clawvisor/local/services)",
    },
  },
  async run({ args }) {
    try {
      const layout = layoutOf(args);
      const home = process.env.HOME ?? homedir();
      if (args.clawvisor) {
        const yaml = renderClawvisorService({
          node: process.execPath,
          cli: installedCliPath(),
          gstackHome: layout.root,
        });
        const folder = join(
          args["services-dir"] ? resolve(args["services-dir"]) : clawvisorServicesDir(home),
          CLAWVISOR_SERVICE_ID,
        );
        const target = join(folder, "service.yaml");
        if (args["dry-run"]) {
          process.stdout.write(yaml);
          process.stderr.write(`(dry run: would write ${target})\n`);
          return;
        }
        await mkdir(folder, { recursive: true });
        await writeFileAtomic(target, yaml, { mode: 0o644 });
        process.stdout.write(`wrote ${target}\n`);
        const reloaded = await execQuiet("curl", [
          "-fsS",
          "-X",
          "POST",
          "http://localhost:25299/api/services/reload",
        ]);
        process.stdout.write(
          reloaded !== undefined
            ? "clawvisor-local reloaded its services\n"
            : "clawvisor-local did not answer; it finds the service at its next start\n",
        );
        return;
      }
      const platform = args.platform ?? process.platform;
      if (platform !== "darwin" && platform !== "linux") {
        throw new DaemonError(`install supports macOS (launchd) and Linux (systemd), not ${platform}`);
      }
      const { settings } = await loadSettings(layout);
      const claude = (await execQuiet("sh", ["-c", "command -v claude"])) || undefined;
      const spec: ServiceSpec = {
        node: process.execPath,
        cli: installedCliPath(),
        gstackHome: layout.root,
        home,
        ...(claude ? { claude } : {}),
        ...(process.env.PATH ? { path: process.env.PATH } : {}),
        stopTimeoutSeconds: settings.shutdown_grace_seconds + 30,
      };
      const darwin = platform === "darwin";
      const unit = darwin ? renderLaunchdPlist(spec) : renderSystemdUnit(spec);
      const files = serviceFiles(platform, { ...process.env, HOME: home });
      if (args["dry-run"]) {
        process.stdout.write(unit);
        process.stderr.write(`(dry run: would write ${files.unit})\n`);
        return;
      }
      if (!claude)
        process.stderr.write(
          "warning: 'claude' is not on PATH; the daemon will refuse to start until it is\n",
        );
      await activateService(files, unit, {
        uid: process.getuid?.() ?? 0,
        report: (line) => process.stdout.write(`${line}\n`),
      });
      if (!darwin)
        process.stdout.write("to keep it running after you log out: loginctl enable-linger $USER\n");
    } catch (error) {
      fail(error);
    }
  },
});

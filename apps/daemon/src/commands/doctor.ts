import { homedir } from "node:os";
import { DaemonError } from "@gstack/daemon-client";
import { defineCommand } from "citty";
import { formatDoctor } from "../doctor/doctor-check";
import { runDoctor } from "../doctor/doctor-checks";
import { commandMeta } from "./command-meta";
import { fail, layoutOf, rootArg } from "./common";

export const doctor = defineCommand({
  meta: commandMeta.doctor,
  args: {
    ...rootArg,
    json: { type: "boolean", description: "print the checks as JSON" },
    platform: { type: "string", description: "darwin or linux (default: this machine)" },
  },
  async run({ args }) {
    try {
      const platform = args.platform ?? process.platform;
      if (platform !== "darwin" && platform !== "linux") {
        throw new DaemonError(`doctor knows macOS (launchd) and Linux (systemd), not ${platform}`);
      }
      const checks = await runDoctor({
        layout: layoutOf(args),
        env: process.env,
        home: process.env.HOME ?? homedir(),
        platform,
      });
      const ok = checks.every((check) => check.status !== "fail");
      process.stdout.write(args.json ? `${JSON.stringify({ ok, checks }, null, 2)}\n` : formatDoctor(checks));
      if (!ok) process.exitCode = 1;
    } catch (error) {
      fail(error);
    }
  },
});

import { homedir } from "node:os";
import { join } from "node:path";
import { SERVICE_LABEL, SYSTEMD_UNIT } from "../service-unit";
import type { ServiceStep } from "./run-step";

export type ServicePlatform = "darwin" | "linux";

/** Where the service manager reads the daemon's unit, and the links `enable` makes beside it. */
export interface ServiceFiles {
  platform: ServicePlatform;
  /** The launchd plist or the systemd user unit. */
  unit: string;
  /** Links the service manager makes when it enables the unit (systemd's `*.wants/`). */
  links: string[];
}

export function serviceFiles(platform: ServicePlatform, env: NodeJS.ProcessEnv = process.env): ServiceFiles {
  const home = env.HOME ?? homedir();
  if (platform === "darwin") {
    return { platform, unit: join(home, "Library", "LaunchAgents", `${SERVICE_LABEL}.plist`), links: [] };
  }
  const folder = join(env.XDG_CONFIG_HOME ?? join(home, ".config"), "systemd", "user");
  return {
    platform,
    unit: join(folder, SYSTEMD_UNIT),
    links: [join(folder, "default.target.wants", SYSTEMD_UNIT)],
  };
}

/** The steps that load and start the unit just written. `required: false` may fail (nothing to stop). */
export function activationSteps(
  files: ServiceFiles,
  uid: number,
): Array<ServiceStep & { required: boolean }> {
  return files.platform === "darwin"
    ? [
        { program: "launchctl", args: ["bootout", `gui/${uid}/${SERVICE_LABEL}`], required: false },
        { program: "launchctl", args: ["bootstrap", `gui/${uid}`, files.unit], required: true },
      ]
    : [
        { program: "systemctl", args: ["--user", "daemon-reload"], required: true },
        { program: "systemctl", args: ["--user", "enable", "--now", SYSTEMD_UNIT], required: true },
      ];
}

/** The steps that stop and unload the daemon's service; each may fail when it is not loaded. */
export function deactivationSteps(files: ServiceFiles, uid: number): ServiceStep[] {
  return files.platform === "darwin"
    ? [{ program: "launchctl", args: ["bootout", `gui/${uid}/${SERVICE_LABEL}`] }]
    : [
        { program: "systemctl", args: ["--user", "disable", "--now", SYSTEMD_UNIT] },
        { program: "systemctl", args: ["--user", "daemon-reload"] },
      ];
}

/** One line on why a service manager may refuse, for the error that reports it. */
export function refusalHint(platform: ServicePlatform, cause: string): string {
  if (platform === "linux" && /connect to bus|XDG_RUNTIME_DIR|DBUS/i.test(cause)) {
    return "there is no systemd user session for this user (log in on a console or over SSH, or as root run `loginctl enable-linger $USER`), or run `gstack-dispatch run` in a terminal instead";
  }
  if (/not on PATH/.test(cause)) {
    return platform === "linux"
      ? "this system has no systemd; run `gstack-dispatch run` under your own supervisor"
      : "launchctl is missing; run `gstack-dispatch run` in a terminal instead";
  }
  return "run `gstack-dispatch doctor` for the rest of the set-up";
}

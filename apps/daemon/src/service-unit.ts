import { delimiter, dirname } from "node:path";

/** The label of the launchd job and the name of the systemd unit. */
export const SERVICE_LABEL = "dev.gstack.dispatch";
export const SYSTEMD_UNIT = "gstack-dispatch.service";

/** What a service unit needs to start the daemon outside a login shell. */
export interface ServiceSpec {
  /** Absolute path of node. */
  node: string;
  /** Absolute path of the daemon's cli.js. */
  cli: string;
  /** Absolute path of the claude binary, whose folder goes on PATH. */
  claude?: string;
  /** The gstack state root, passed as GSTACK_HOME. */
  gstackHome: string;
  home: string;
  /** The PATH of the installing shell; kept after the folders the daemon needs. */
  path?: string;
  /** Seconds the service manager waits for a graceful stop (shutdown grace plus a margin). */
  stopTimeoutSeconds?: number;
}

/**
 * An absolute PATH for the service: the folders of node and claude first, then the
 * installing shell's PATH (absolute entries only), then the system folders. Service
 * managers do not read shell profiles, so `~/.local/bin` must be spelled out.
 */
export function servicePath(spec: ServiceSpec): string {
  const entries = [dirname(spec.node), ...(spec.claude ? [dirname(spec.claude)] : [])];
  for (const entry of (spec.path ?? "").split(delimiter)) if (entry.startsWith("/")) entries.push(entry);
  entries.push("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin");
  return [...new Set(entries)].join(delimiter);
}

function xml(text: string): string {
  return text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;");
}

/** A launchd agent plist (`~/Library/LaunchAgents/dev.gstack.dispatch.plist`). */
export function renderLaunchdPlist(spec: ServiceSpec): string {
  const logDir = `${spec.gstackHome}/dispatch`;
  const env: Record<string, string> = {
    PATH: servicePath(spec),
    GSTACK_HOME: spec.gstackHome,
    HOME: spec.home,
  };
  const envXml = Object.entries(env)
    .map(([key, value]) => `      <key>${xml(key)}</key>\n      <string>${xml(value)}</string>`)
    .join("\n");
  return `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
  <dict>
    <key>Label</key>
    <string>${SERVICE_LABEL}</string>
    <key>ProgramArguments</key>
    <array>
      <string>${xml(spec.node)}</string>
      <string>${xml(spec.cli)}</string>
      <string>run</string>
    </array>
    <key>RunAtLoad</key>
    <true/>
    <key>KeepAlive</key>
    <dict>
      <key>SuccessfulExit</key>
      <false/>
    </dict>
    <key>ThrottleInterval</key>
    <integer>30</integer>
    <key>ExitTimeOut</key>
    <integer>${spec.stopTimeoutSeconds ?? 330}</integer>
    <key>ProcessType</key>
    <string>Background</string>
    <key>WorkingDirectory</key>
    <string>${xml(spec.home)}</string>
    <key>StandardOutPath</key>
    <string>${xml(`${logDir}/daemon.log`)}</string>
    <key>StandardErrorPath</key>
    <string>${xml(`${logDir}/daemon.log`)}</string>
    <key>EnvironmentVariables</key>
    <dict>
${envXml}
    </dict>
  </dict>
</plist>
`;
}

function systemdQuote(value: string): string {
  return /[\s"'\\$%]/.test(value)
    ? `"${value.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("%", "%%").replaceAll("$", "$$$$")}"`
    : value;
}

/** A systemd user unit (`~/.config/systemd/user/gstack-dispatch.service`). */
export function renderSystemdUnit(spec: ServiceSpec): string {
  return `[Unit]
Description=gstack dispatch daemon (runs coding agents for OpenClaw dispatches)
After=network-online.target
StartLimitIntervalSec=300
StartLimitBurst=5

[Service]
Type=simple
ExecStart=${systemdQuote(spec.node)} ${systemdQuote(spec.cli)} run
WorkingDirectory=${systemdQuote(spec.home)}
Environment=${systemdQuote(`PATH=${servicePath(spec)}`)}
Environment=${systemdQuote(`GSTACK_HOME=${spec.gstackHome}`)}
Restart=on-failure
RestartSec=10
KillMode=mixed
KillSignal=SIGTERM
TimeoutStopSec=${spec.stopTimeoutSeconds ?? 330}
NoNewPrivileges=true

[Install]
WantedBy=default.target
`;
}

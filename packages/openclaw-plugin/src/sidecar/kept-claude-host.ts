/**
 * A process that serves a contractor sidecar and nothing else, for the tests that kill its host
 * with SIGKILL. Run with tsx: `kept-claude-host.ts <settings JSON>` where the JSON holds
 * `{ port, stateDir, projectDir, claudeBinary, key, claudeEnv, idleTimeoutMs }`. Prints
 * `ready <url>` once the sidecar serves.
 */
import { resolveContractorSettings } from "./contractor-settings";
import { SessionMap } from "./session-map";
import { startSidecarOnce } from "./sidecar-service";

const given = JSON.parse(process.argv[2] ?? "{}") as {
  port: number;
  stateDir: string;
  projectDir: string;
  claudeBinary: string;
  key: string;
  claudeEnv: Record<string, string>;
  idleTimeoutMs: number;
};
const settings = resolveContractorSettings(
  {
    enabled: true,
    projectDir: given.projectDir,
    port: given.port,
    claudeBinary: given.claudeBinary,
    idleTimeoutMs: given.idleTimeoutMs,
  },
  given.stateDir,
);
const started = await startSidecarOnce(settings, {
  key: given.key,
  sessions: new SessionMap(settings.sessionsFile),
  claudeEnv: given.claudeEnv,
  allowedTools: [],
  disallowedTools: [],
  log: { info: () => undefined, warn: (message) => process.stderr.write(`${message}\n`) },
});
if (started.kind !== "started") {
  process.stderr.write(`sidecar not started: ${JSON.stringify(started)}\n`);
  process.exit(1);
}
process.stdout.write(`ready ${started.sidecar.url}\n`);

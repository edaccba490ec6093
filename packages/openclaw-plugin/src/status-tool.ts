import { readStatus } from "@gstack/daemon-client";
import type { PluginSettings } from "./plugin-settings";
import { answer, type ToolAnswer } from "./tool-answer";

/** Running and queued dispatches with their live progress, and whether the daemon is alive. */
export async function runStatusTool(settings: PluginSettings, now = new Date()): Promise<ToolAnswer> {
  const status = await readStatus(settings.layout, now);
  const { sessions } = status;
  const lines = [
    status.alive
      ? `The gstack daemon is running: ${sessions.active} of ${sessions.max_concurrent} slots busy, ${sessions.queued} queued.`
      : "The gstack daemon is not running (no recent heartbeat): queued dispatches wait until the user starts it with `gstack-dispatch run`.",
  ];
  for (const session of sessions.sessions) {
    const progress = [
      `${session.elapsed}s`,
      session.turns === undefined ? undefined : `${session.turns} turns`,
      session.commits === undefined ? undefined : `${session.commits} commits`,
      session.last_action ? `last: ${session.last_action}` : undefined,
    ].filter(Boolean);
    lines.push(
      `- ${session.id} (${session.project}, ${(session as { status?: string }).status ?? "running"}): ${progress.join(", ")}`,
    );
  }
  if (sessions.sessions.length === 0) lines.push("Nothing is running.");
  return answer(lines.join("\n"), { alive: status.alive, sessions });
}

/**
 * The environment that tells gstack an agent the daemon started is a parent-driven run with no
 * person present, so its skills never wait on a question nobody will answer.
 *
 * gstack decides from environment variables alone. How each version ranks them:
 *
 * - gstack 1.68 (`bin/gstack-session-kind`), first match wins: `OPENCLAW_SESSION` (spawned: the
 *   skill takes each recommended option itself), then `GSTACK_HEADLESS` (headless: a question
 *   blocks), then Conductor's variables or `CLAUDE_CODE_ENTRYPOINT=cli` (interactive), then `CI`
 *   or `GITHUB_ACTIONS` (headless), else interactive. Claude Code sets
 *   `CLAUDE_CODE_ENTRYPOINT=cli` for `claude --print` too, so without a marker a dispatched agent
 *   counts as interactive. `OPENCLAW_SESSION` is checked before it, so setting it is enough.
 *   1.68 does not read `GSTACK_SESSION_KIND`.
 * - unattended-era gstack (the 1.91 line) honours `GSTACK_SESSION_KIND=unattended` as an explicit
 *   override that outranks the headless markers (`GSTACK_HEADLESS`, `CI`); an unknown value falls
 *   back to interactive. As the explicit override it is read before the detected kinds, so it
 *   also wins over `OPENCLAW_SESSION`, and a run there gets the full unattended contract (no
 *   prompts, gates written as pending decisions, a `GSTACK_RESULT:` last line).
 *
 * Both are set: each version reads the one it knows and ignores the other. `GSTACK_HEADLESS` is
 * removed (on 1.68 it would only matter without `OPENCLAW_SESSION`, but a daemon started from a
 * harness that exports it must not hand it on), as is `GSTACK_EPHEMERAL`: the daemon's state root
 * is durable, so learnings and timing are kept. The state root is named both ways:
 * `GSTACK_STATE_ROOT` (read first by unattended-era gstack) and `GSTACK_HOME` (read by 1.68).
 */
export interface UnattendedEnvironmentOptions {
  /** The dispatch the agent works on. */
  dispatchId: string;
  /** The daemon's gstack state root. */
  stateRoot: string;
  /** The OpenClaw session the dispatch came from, when it names one. */
  openclawSession?: string;
}

/** Variables set (a string) or removed (`undefined`) for every agent the daemon starts. */
export function unattendedEnvironment(
  options: UnattendedEnvironmentOptions,
): Record<string, string | undefined> {
  return {
    GSTACK_SESSION_KIND: "unattended",
    OPENCLAW_SESSION: options.openclawSession ?? `gstack-dispatch:${options.dispatchId}`,
    GSTACK_HEADLESS: undefined,
    GSTACK_EPHEMERAL: undefined,
    GSTACK_STATE_ROOT: options.stateRoot,
    GSTACK_HOME: options.stateRoot,
    GSTACK_DISPATCH_ID: options.dispatchId,
  };
}

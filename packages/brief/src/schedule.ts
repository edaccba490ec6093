/** What a scheduled brief is: when, for which projects, and where it is delivered. */
export interface BriefSchedule {
  /** A five-field cron expression, e.g. `0 9 * * 1-5` (weekdays at 9:00). */
  cron: string;
  /** The time zone the cron is read in (OpenClaw's `--tz`), e.g. `Europe/Berlin`. */
  tz?: string;
  /** Projects briefed every time, besides the coding sessions on today's calendar. */
  projects?: readonly string[];
  /** The person's channel (an OpenClaw channel plugin id, e.g. `telegram`) and their address on it. */
  channel: string;
  to: string;
  /** The OpenClaw agent that runs it (default: OpenClaw's default agent). */
  agent?: string;
  name?: string;
}

const CRON = /^\S+(\s+\S+){4}$/;

/** The agent's instructions for one scheduled brief. */
export function scheduledBriefMessage(projects: readonly string[] = []): string {
  const named =
    projects.length > 0
      ? ` Also brief me on ${projects.join(", ")} every time, with gstack_brief for each.`
      : "";
  return [
    "Morning gstack brief: read today's calendar with your calendar tool, if you have one, and for each coding session on it (an event naming a project) call gstack_brief with that project.",
    named.trim(),
    "Send me each brief as it is, in a few lines, keeping its 'Drafted dispatch … (not sent)' line, and send no draft: I answer yes when I want one sent.",
    "If there is nothing to brief, reply exactly NO_REPLY.",
  ]
    .filter(Boolean)
    .join(" ");
}

/**
 * The arguments of `openclaw automations create` for a scheduled brief: an isolated agent turn
 * on the cron schedule whose final reply OpenClaw announces to the person's channel (OpenClaw's
 * own scheduler, delivery and retries). Throws on a schedule OpenClaw would refuse.
 */
export function scheduleArguments(schedule: BriefSchedule): string[] {
  const cron = schedule.cron.trim();
  if (!CRON.test(cron)) {
    throw new Error(
      `schedule: ${JSON.stringify(schedule.cron)} is not a five-field cron expression such as "0 9 * * 1-5"`,
    );
  }
  for (const [field, value] of [
    ["channel", schedule.channel],
    ["to", schedule.to],
  ] as const) {
    if (value.trim() === "") throw new Error(`schedule: ${field} must name where the brief is delivered`);
  }
  return [
    "automations",
    "create",
    cron,
    scheduledBriefMessage(schedule.projects),
    "--name",
    schedule.name ?? "gstack brief",
    ...(schedule.tz ? ["--tz", schedule.tz] : []),
    "--session",
    "isolated",
    ...(schedule.agent ? ["--agent", schedule.agent] : []),
    "--announce",
    "--channel",
    schedule.channel,
    "--to",
    schedule.to,
    "--json",
  ];
}

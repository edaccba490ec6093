import { type Handoff, loadYaml, parseValue, timestampSchema } from "@gstack/contracts";
import { HandoffError } from "./handoff-error";
import { composePrompt } from "./resume-prompt";

/** The parts of a gstack `/context-save` checkpoint file. */
export interface Checkpoint {
  title?: string;
  status?: string;
  branch?: string;
  timestamp?: string;
  sessionDurationSeconds?: number;
  filesModified: string[];
  summary?: string;
  decisions?: string;
  remainingWork?: string;
  notes?: string;
}

const SECTION_NAMES: Record<string, "summary" | "decisions" | "remainingWork" | "notes"> = {
  summary: "summary",
  "decisions made": "decisions",
  decisions: "decisions",
  "remaining work": "remainingWork",
  "next steps": "remainingWork",
  notes: "notes",
};

/**
 * Reads a checkpoint file: frontmatter (status, branch, timestamp, session_duration_s,
 * files_modified), `## Working on: {title}`, and the `###` sections Summary, Decisions Made,
 * Remaining Work and Notes. Other `###` sections are kept under Notes with their heading. Pure.
 */
export function parseCheckpoint(text: string, source = "<checkpoint>"): Checkpoint {
  const lines = text.split(/\r?\n/);
  let bodyStart = 0;
  let frontmatter: Record<string, unknown> = {};
  if (lines[0] === "---") {
    const end = lines.indexOf("---", 1);
    if (end < 0)
      throw new HandoffError("malformed-file", `${source}:1: the frontmatter has no closing '---'`);
    const document = loadYaml().parseDocument(lines.slice(1, end).join("\n"));
    if (document.errors.length > 0) {
      const line = (document.errors[0]!.linePos?.[0].line ?? 0) + 1;
      throw new HandoffError(
        "malformed-file",
        `${source}:${line}: frontmatter: ${document.errors[0]!.message.split("\n")[0]}`,
      );
    }
    frontmatter = parseValue("checkpoint-frontmatter", document.toJS() ?? {}, { source });
    bodyStart = end + 1;
  }
  const checkpoint: Checkpoint = { filesModified: [] };
  const fm = frontmatter as {
    status?: string;
    branch?: string;
    timestamp?: string;
    session_duration_s?: number | string;
    files_modified?: string[];
  };
  if (fm.status) checkpoint.status = String(fm.status);
  if (fm.branch) checkpoint.branch = String(fm.branch);
  if (fm.timestamp) checkpoint.timestamp = String(fm.timestamp);
  if (fm.session_duration_s !== undefined) checkpoint.sessionDurationSeconds = Number(fm.session_duration_s);
  checkpoint.filesModified = fm.files_modified ?? [];

  let current: "summary" | "decisions" | "remainingWork" | "notes" = "summary";
  const collected: Record<string, string[]> = { summary: [], decisions: [], remainingWork: [], notes: [] };
  for (const line of lines.slice(bodyStart)) {
    const title = /^##[ \t]+Working on:?[ \t]*(.*?)[ \t]*$/i.exec(line);
    if (title) {
      checkpoint.title = title[1];
      continue;
    }
    const section = /^###[ \t]+(.*?)[ \t]*$/.exec(line);
    if (section) {
      const known = SECTION_NAMES[section[1]!.toLowerCase().replace(/:$/, "")];
      if (known) current = known;
      else {
        current = "notes";
        collected.notes!.push(`${section[1]}:`);
      }
      continue;
    }
    collected[current]!.push(line);
  }
  for (const key of ["summary", "decisions", "remainingWork", "notes"] as const) {
    const value = collected[key]!.join("\n").trim();
    if (value !== "") checkpoint[key] = value;
  }
  return checkpoint;
}

/** `20260403-143000-title` → the UTC time of its stamp. */
export function timeFromCheckpointName(name: string): string | undefined {
  const match = /^([0-9]{4})([0-9]{2})([0-9]{2})-([0-9]{2})([0-9]{2})([0-9]{2})/.exec(name);
  if (!match) return undefined;
  const [, year, month, day, hour, minute, second] = match;
  const date = new Date(`${year}-${month}-${day}T${hour}:${minute}:${second}Z`);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

function list(items: readonly string[]): string {
  return items.map((item) => `- ${item}`).join("\n");
}

/**
 * A checkpoint as a handoff from gstack. The resume prompt is generated from the summary,
 * decisions, remaining work, notes and modified files; when that exceeds 4096 characters
 * the longest parts are shortened and the prompt says so and names the checkpoint file
 * (`resume_prompt_shortened: true` marks it). Pure: the caller supplies the file's time
 * for checkpoints without a usable timestamp.
 */
export function checkpointToHandoff(
  checkpoint: Checkpoint,
  details: { project: string; path: string; name: string; fileTime?: Date },
): Handoff {
  const timestamp =
    (checkpoint.timestamp && timestampSchema.safeParse(checkpoint.timestamp).success
      ? checkpoint.timestamp
      : undefined) ??
    timeFromCheckpointName(details.name) ??
    (details.fileTime ?? new Date(0)).toISOString();
  const title = checkpoint.title ?? details.name;
  const stateParts = [
    checkpoint.decisions ? `Decisions made:\n${checkpoint.decisions}` : undefined,
    checkpoint.notes ? `Notes:\n${checkpoint.notes}` : undefined,
    checkpoint.filesModified.length > 0 ? `Files modified:\n${list(checkpoint.filesModified)}` : undefined,
    checkpoint.status ? `Checkpoint status: ${checkpoint.status}` : undefined,
    checkpoint.sessionDurationSeconds !== undefined && Number.isFinite(checkpoint.sessionDurationSeconds)
      ? `Session length: ${Math.round(checkpoint.sessionDurationSeconds / 60)} min`
      : undefined,
  ].filter((part): part is string => part !== undefined);
  const where = [`project ${details.project}`, checkpoint.branch ? `branch ${checkpoint.branch}` : undefined]
    .filter(Boolean)
    .join(", ");
  const { prompt, shortened } = composePrompt(
    `Continue the work saved in the gstack checkpoint "${title}" (${where}). Check the branch out first if needed.`,
    [
      { label: "Summary", text: checkpoint.summary },
      { label: "Decisions made", text: checkpoint.decisions },
      { label: "Remaining work", text: checkpoint.remainingWork },
      { label: "Notes", text: checkpoint.notes },
      { label: "Files modified", text: list(checkpoint.filesModified) },
    ],
    { fullTextAt: details.path },
  );
  return parseValue(
    "handoff",
    {
      from: "gstack",
      to: "openclaw",
      project: details.project,
      ...(checkpoint.branch ? { branch: checkpoint.branch } : {}),
      timestamp,
      status: "pending",
      source: details.path,
      context: [`Working on: ${title}`, checkpoint.summary].filter(Boolean).join("\n\n"),
      ...(stateParts.length > 0 ? { state: stateParts.join("\n\n") } : {}),
      ...(checkpoint.remainingWork ? { what_i_need: checkpoint.remainingWork } : {}),
      resume_prompt: prompt,
      resume_prompt_generated: true,
      ...(shortened ? { resume_prompt_shortened: true } : {}),
    },
    { source: details.path },
  );
}

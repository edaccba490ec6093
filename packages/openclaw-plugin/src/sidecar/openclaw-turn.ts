import { createHash } from "node:crypto";
import { type ChatMessage, textOfMessage } from "./openai-wire";

/** What a Chat Completions request from OpenClaw says about its session and its newest turn. */
export interface OpenClawTurn {
  /** The OpenClaw session key (`agent:<id>:<name>`), or a key derived from the conversation's start. */
  sessionKey: string;
  /** Whether the key came from OpenClaw's own runtime line (otherwise it was derived). */
  keyFromRuntime: boolean;
  /** OpenClaw's session id (changes when the session is reset). */
  openclawSessionId?: string;
  /** The OpenClaw agent's workspace. */
  workspace?: string;
  agentId?: string;
  /** What the person said since the assistant last answered, runtime line and internal context removed. */
  text: string;
  /** The same, one entry per user message (oldest first), so messages Claude already has can be left out. */
  parts: string[];
}

const INTERNAL_CONTEXT = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>";
const RUNTIME_LINE = /^Runtime: (.+)$/m;

/** The fields of OpenClaw's `Runtime: agent=… | session=… | sessionId=… | repo=…` line. */
export function parseRuntimeLine(text: string): Record<string, string> | undefined {
  const match = RUNTIME_LINE.exec(text);
  if (!match) return undefined;
  const fields: Record<string, string> = {};
  for (const part of (match[1] ?? "").split(" | ")) {
    const equals = part.indexOf("=");
    if (equals > 0) fields[part.slice(0, equals).trim()] = part.slice(equals + 1).trim();
  }
  return fields;
}

function isInternalContext(text: string): boolean {
  return text.trimStart().startsWith(INTERNAL_CONTEXT);
}

/**
 * Reads one request's session and newest user text. OpenClaw resends the whole conversation each
 * turn and appends its runtime line (with the session key) to the first user message of a
 * session, so the key is found the same way on every turn. A client that sends no runtime line
 * gets a key derived from the conversation's first user message (stable while the history is
 * resent), or the one it names in `user`.
 */
export function readOpenClawTurn(messages: readonly ChatMessage[], user?: string): OpenClawTurn {
  let runtime: Record<string, string> | undefined;
  let firstUser: string | undefined;
  for (const message of messages) {
    if (message.role !== "user" && message.role !== "system") continue;
    const text = textOfMessage(message.content);
    if (message.role === "user" && firstUser === undefined && !isInternalContext(text)) firstUser = text;
    runtime = parseRuntimeLine(text) ?? runtime;
  }
  const texts: string[] = [];
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index]!;
    if (message.role === "assistant") break;
    if (message.role !== "user") continue;
    const text = textOfMessage(message.content);
    if (isInternalContext(text)) continue;
    texts.unshift(text.replace(RUNTIME_LINE, "").trim());
  }
  const parts = texts.filter((part) => part.length > 0);
  const text = parts.join("\n\n");
  const named = runtime?.session;
  const sessionKey =
    named ??
    (user && user.length > 0
      ? `user:${user}`
      : `conversation:${createHash("sha256")
          .update(firstUser ?? "")
          .digest("hex")
          .slice(0, 24)}`);
  return {
    sessionKey,
    keyFromRuntime: named !== undefined,
    ...(runtime?.sessionId ? { openclawSessionId: runtime.sessionId } : {}),
    ...(runtime?.repo ? { workspace: runtime.repo } : {}),
    ...(runtime?.agent ? { agentId: runtime.agent } : {}),
    text,
    parts,
  };
}

/** OpenClaw's envelope before a user message (`[Fri 2026-11-27 10:55 UTC] `), rendered anew with each prompt. */
const ENVELOPE_TIMESTAMP = /^\[[A-Za-z]{3} \d{4}-\d{2}-\d{2} \d{2}:\d{2}[^\]]*\] */;

/**
 * A short fingerprint of one user message, to recognise it when OpenClaw sends it again. The
 * timestamp envelope is left out: OpenClaw puts it on the message of the running turn, and an
 * older message in the history it resends may carry it differently or not at all.
 */
export function messageFingerprint(text: string): string {
  return createHash("sha256")
    .update(text.trim().replace(ENVELOPE_TIMESTAMP, "").trim())
    .digest("hex")
    .slice(0, 32);
}

/**
 * How OpenClaw folds a message left unanswered by an interrupted turn into the next one:
 * this line, the earlier message, a blank line, then the new prompt (all in one user message).
 */
export const QUEUED_MESSAGE_MARKER =
  "[Queued user message from a previous active turn; preserved as context only. Continue with the active prompt below.]";

/** The part without what Claude Code already has: undefined when it has all of it. */
function unsentPart(part: string, known: ReadonlySet<string>): string | undefined {
  if (known.has(messageFingerprint(part))) return undefined;
  const trimmed = part.trim();
  const envelope = ENVELOPE_TIMESTAMP.exec(trimmed)?.[0] ?? "";
  const body = trimmed.slice(envelope.length);
  if (!body.startsWith(`${QUEUED_MESSAGE_MARKER}\n`)) return part;
  const queued = body.slice(QUEUED_MESSAGE_MARKER.length + 1);
  // The earlier message may itself hold blank lines: try each one as the end of the queued block.
  for (let gap = queued.indexOf("\n\n"); gap >= 0; gap = queued.indexOf("\n\n", gap + 1)) {
    if (known.has(messageFingerprint(queued.slice(0, gap)))) {
      return unsentPart(`${envelope}${queued.slice(gap + 2)}`, known);
    }
  }
  return part;
}

/**
 * The turn without the user messages Claude Code was already given (`sent`: their
 * fingerprints) — what an aborted or crashed turn left unanswered, which OpenClaw sends again:
 * as messages of their own before the newest, or folded into it after its queued-message line.
 * Undefined when nothing new is left.
 */
export function withoutSentMessages(turn: OpenClawTurn, sent: readonly string[]): OpenClawTurn | undefined {
  if (sent.length === 0) return turn;
  const known = new Set(sent);
  const parts = turn.parts.flatMap((part) => {
    const rest = unsentPart(part, known);
    return rest === undefined || rest.trim().length === 0 ? [] : [rest];
  });
  if (parts.length === 0) return undefined;
  return { ...turn, parts, text: parts.join("\n\n") };
}

/**
 * The first message of a Claude Code session: where it runs, which OpenClaw session it serves,
 * that gstack's skills are there and how long work goes to the background.
 */
export function bootstrapPrompt(options: { turn: OpenClawTurn; projectDir: string; note?: string }): string {
  const { turn, projectDir } = options;
  const lines = [
    "You are talking to a person through OpenClaw (chat: WhatsApp, Slack, the web UI). Each message below is one chat turn; answer in chat-sized text.",
    `Project folder: ${projectDir}. OpenClaw session: ${turn.sessionKey}${turn.workspace ? `; OpenClaw workspace: ${turn.workspace}` : ""}.`,
    "gstack's skills are installed; this is a spawned session (OPENCLAW_SESSION is set), so pick recommended options yourself and never wait for a question to be answered.",
    `For a long task the person wants done in the background ("do this in the background"), do not do it in this turn: write a dispatch file (JSON: "id": "dispatch-" plus a unique suffix, "dispatched_by": "openclaw", "task", "project" (a lowercase slug), "project_dir", "reply_to": {"runtime": "openclaw", "session_key": ${JSON.stringify(turn.sessionKey)}${turn.agentId ? `, "agent_id": ${JSON.stringify(turn.agentId)}` : ""}}) in the project folder as .gstack-dispatch.json and run \`gstack-dispatch submit .gstack-dispatch.json\`. The gstack daemon runs it and its completion report comes back into this chat by itself; say so and end the turn.`,
  ];
  if (options.note) lines.push(options.note);
  return `${lines.join("\n")}\n\n---\n\n${turn.text}`;
}

import { isAbsolute, relative, resolve } from "node:path";
import { isObject } from "./output-tracker";

/** What a dispatch may do, in Claude Code's tool-pattern terms (see `tool-permissions.ts`). */
export interface AcpPermissionPolicy {
  /** The working directory: edits outside it are refused. */
  cwd: string;
  /** Granted patterns, e.g. `Bash(git commit:*)`, `Write`, `Read`. */
  allowedTools: readonly string[];
  /** Refused patterns, e.g. `Bash(curl:*)`, `Read(secrets/**)`; they win over grants. */
  disallowedTools: readonly string[];
  /** Plan mode: only reading and searching are allowed. */
  planOnly?: boolean;
}

/** A permission request as ACP sends it (only the fields the policy reads). */
export interface AcpPermissionRequest {
  toolCall: {
    toolCallId?: string;
    title?: string | null;
    kind?: string | null;
    rawInput?: unknown;
    locations?: readonly { path: string }[] | null;
  };
  options: readonly { optionId: string; kind: string; name?: string }[];
}

/** The answer, and why. `optionId` undefined means the request is answered as cancelled. */
export interface AcpPermissionDecision {
  allow: boolean;
  optionId: string | undefined;
  /** What was asked, for logs and reports. */
  action: string;
  /** Why it was refused (or which grant allowed it). */
  reason: string;
}

interface ToolPattern {
  tool: string;
  /** The part in parentheses, when there is one. */
  argument?: string;
}

function parsePattern(pattern: string): ToolPattern {
  const match = /^([^()]+)\((.*)\)$/s.exec(pattern.trim());
  return match ? { tool: match[1]!.trim(), argument: match[2]! } : { tool: pattern.trim() };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * Whether a shell command matches a Claude Code Bash pattern: `prefix:*` is the prefix followed
 * by nothing or a space; otherwise `*` stands for anything and the rest must match exactly.
 */
export function commandMatches(argument: string, command: string): boolean {
  const wanted = argument.trim();
  const given = command.trim();
  if (wanted.endsWith(":*")) {
    const prefix = wanted.slice(0, -2).trim();
    return given === prefix || given.startsWith(`${prefix} `);
  }
  const expression = new RegExp(`^${wanted.split("*").map(escapeRegExp).join(".*")}$`, "s");
  return expression.test(given);
}

/** Whether a path matches a file pattern: `**` crosses folders, `*` does not. */
export function pathMatches(argument: string, path: string, cwd: string): boolean {
  const pattern = argument.trim().replace(/^\.\//, "");
  const source = pattern
    .split("**")
    .map((part) => part.split("*").map(escapeRegExp).join("[^/]*"))
    .join(".*");
  const expression = new RegExp(`^${source}$`, "s");
  const absolute = resolve(cwd, path);
  const inside = relative(cwd, absolute);
  return expression.test(absolute) || expression.test(inside) || expression.test(path);
}

/**
 * The simple commands of a shell line, split at `&&`, `||`, `;`, `|` and newlines outside quotes:
 * each must be allowed on its own, so `git status && curl …` is not let through by its first part.
 */
export function commandParts(command: string): string[] {
  const parts: string[] = [];
  let current = "";
  let quote: string | undefined;
  for (let index = 0; index < command.length; index += 1) {
    const character = command[index]!;
    if (quote) {
      current += character;
      if (character === quote) quote = undefined;
      else if (character === "\\" && quote === '"' && index + 1 < command.length) {
        current += command[index + 1];
        index += 1;
      }
      continue;
    }
    if (character === "'" || character === '"') {
      quote = character;
      current += character;
      continue;
    }
    const two = command.slice(index, index + 2);
    if (two === "&&" || two === "||") {
      parts.push(current);
      current = "";
      index += 1;
      continue;
    }
    if (character === ";" || character === "|" || character === "\n") {
      parts.push(current);
      current = "";
      continue;
    }
    current += character;
  }
  parts.push(current);
  return parts.map((part) => part.trim()).filter((part) => part !== "");
}

const readTools = ["Read", "Grep", "Glob"];
const editTools = ["Edit", "Write", "MultiEdit", "NotebookEdit"];

function stringField(input: unknown, ...names: string[]): string | undefined {
  if (!isObject(input)) return undefined;
  for (const name of names) {
    const value = input[name];
    if (typeof value === "string" && value !== "") return value;
  }
  return undefined;
}

/** Files a tool call names: its locations, else the path fields of its input. */
function pathsOf(request: AcpPermissionRequest): string[] {
  const located = (request.toolCall.locations ?? []).map((location) => location.path);
  if (located.length > 0) return located;
  const path = stringField(request.toolCall.rawInput, "file_path", "path", "notebook_path");
  return path ? [path] : [];
}

/** The kind of a call whose request and announcement both left it out, from its input's fields. */
function inferredKind(input: unknown): string {
  if (stringField(input, "command", "cmd")) return "execute";
  const changes = ["content", "old_string", "new_string", "edits", "new_source"];
  if (stringField(input, "file_path", "path", "notebook_path") && isObject(input)) {
    return changes.some((name) => name in input) ? "edit" : "read";
  }
  return "other";
}

function choose(request: AcpPermissionRequest, allow: boolean): string | undefined {
  // Never an "always" answer: each request is judged on its own, so one grant cannot widen later ones.
  const kind = allow ? "allow_once" : "reject_once";
  const fallback = allow ? undefined : "reject_always";
  return (
    request.options.find((option) => option.kind === kind)?.optionId ??
    (fallback ? request.options.find((option) => option.kind === fallback)?.optionId : undefined)
  );
}

/**
 * Answers an ACP permission request by the dispatch's policy, as Claude Code's own flags would:
 * refused patterns win; shell commands need a grant for every part of the line; edits are allowed
 * inside the working directory only; reading is allowed unless refused; plan mode allows reading
 * and searching alone; anything else (fetching, unknown tools, leaving plan mode) is refused.
 * An allowed request is answered "allow once", never "allow always"; a request offering no such
 * option is refused.
 */
export function decidePermission(
  request: AcpPermissionRequest,
  policy: AcpPermissionPolicy,
): AcpPermissionDecision {
  const { toolCall } = request;
  const kind = toolCall.kind ?? inferredKind(toolCall.rawInput);
  const command = stringField(toolCall.rawInput, "command", "cmd");
  const paths = pathsOf(request);
  const action = command
    ? `Bash: ${command}`
    : `${toolCall.title ?? kind}${paths.length > 0 && !(toolCall.title ?? "").includes(paths[0]!) ? ` ${paths.join(", ")}` : ""}`;
  const refuse = (reason: string): AcpPermissionDecision => ({
    allow: false,
    optionId: choose(request, false),
    action,
    reason,
  });
  const grant = (reason: string): AcpPermissionDecision => {
    const optionId = choose(request, true);
    return optionId === undefined
      ? refuse("the agent offered no way to allow this once")
      : { allow: true, optionId, action, reason };
  };
  const disallowed = policy.disallowedTools.map(parsePattern);
  const allowed = policy.allowedTools.map(parsePattern);

  if (command !== undefined || kind === "execute") {
    if (policy.planOnly) return refuse("plan mode: nothing may run until the plan is approved");
    if (command === undefined) return refuse("a command whose text the agent did not give");
    const parts = commandParts(command);
    if (parts.length === 0) return refuse("an empty command");
    for (const part of parts) {
      const blocked = disallowed.find(
        (pattern) =>
          pattern.tool === "Bash" &&
          (pattern.argument === undefined || commandMatches(pattern.argument, part)),
      );
      if (blocked) return refuse(`\`${part}\` matches the refused pattern Bash(${blocked.argument ?? ""})`);
    }
    for (const part of parts) {
      const granted = allowed.some(
        (pattern) =>
          pattern.tool === "Bash" &&
          (pattern.argument === undefined || commandMatches(pattern.argument, part)),
      );
      if (!granted) return refuse(`\`${part}\` is not among the commands this dispatch may run`);
    }
    return grant("every part of the command is granted");
  }

  if (kind === "read" || kind === "search") {
    for (const path of paths) {
      const blocked = disallowed.find(
        (pattern) =>
          readTools.includes(pattern.tool) &&
          (pattern.argument === undefined || pathMatches(pattern.argument, path, policy.cwd)),
      );
      if (blocked)
        return refuse(`${path} matches the refused pattern ${blocked.tool}(${blocked.argument ?? ""})`);
    }
    return grant("reading is allowed");
  }

  if (kind === "edit" || kind === "delete" || kind === "move") {
    if (policy.planOnly) return refuse("plan mode: nothing may change until the plan is approved");
    if (paths.length === 0) return refuse("a change that names no file");
    for (const path of paths) {
      const absolute = isAbsolute(path) ? path : resolve(policy.cwd, path);
      const inside = relative(policy.cwd, absolute);
      if (inside.startsWith("..") || isAbsolute(inside)) {
        return refuse(`${path} is outside the working directory`);
      }
      const blocked = disallowed.find(
        (pattern) =>
          editTools.includes(pattern.tool) &&
          (pattern.argument === undefined || pathMatches(pattern.argument, path, policy.cwd)),
      );
      if (blocked)
        return refuse(`${path} matches the refused pattern ${blocked.tool}(${blocked.argument ?? ""})`);
    }
    return grant("edits inside the working directory are allowed");
  }

  if (kind === "think") return grant("thinking is allowed");
  if (kind === "switch_mode") {
    return refuse(
      policy.planOnly ? "plan mode: the plan waits for a person's approval" : "mode changes are not allowed",
    );
  }
  return refuse(`${kind === "fetch" ? "fetching" : `a ${kind} tool`} is not allowed for dispatched work`);
}

/** How one Claude Code tool is reached on OpenClaw. */
export interface ToolMapping {
  /** The OpenClaw agent tool that does the same job. */
  openclaw: string;
  /** When the job is done by a command run through that tool, the command. */
  command?: string;
  /** True when the Claude name is also an everyday English word ("Read", "Edit"). */
  ambiguous: boolean;
}

/**
 * Claude Code tools with a direct OpenClaw counterpart. AskUserQuestion, the plan-mode
 * tools, the Skill tool and TodoWrite have no tool counterpart and are rewritten as
 * instructions instead (see `rewrite-prose.ts`).
 */
export const toolMappings: Readonly<Record<string, ToolMapping>> = {
  Read: { openclaw: "read", ambiguous: true },
  Write: { openclaw: "write", ambiguous: true },
  Edit: { openclaw: "edit", ambiguous: true },
  MultiEdit: { openclaw: "edit", ambiguous: false },
  NotebookEdit: { openclaw: "edit", ambiguous: false },
  Bash: { openclaw: "exec", ambiguous: true },
  Grep: { openclaw: "exec", command: "grep", ambiguous: true },
  Glob: { openclaw: "exec", command: "find", ambiguous: true },
  WebSearch: { openclaw: "web_search", ambiguous: false },
  WebFetch: { openclaw: "web_fetch", ambiguous: false },
  Agent: { openclaw: "sessions_spawn", ambiguous: true },
  Task: { openclaw: "sessions_spawn", ambiguous: true },
};

/** Claude Code tool names that are rewritten as instructions rather than renamed. */
export const instructionTools = [
  "AskUserQuestion",
  "ExitPlanMode",
  "EnterPlanMode",
  "Skill",
  "TodoWrite",
] as const;

/** Every Claude Code tool name the transform knows. */
export const claudeToolNames: readonly string[] = [...Object.keys(toolMappings), ...instructionTools];

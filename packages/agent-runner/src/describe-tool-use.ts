const maximumLength = 160;

function shorten(value: string): string {
  const single = value.replace(/\s+/g, " ").trim();
  return single.length > maximumLength ? `${single.slice(0, maximumLength - 1)}…` : single;
}

function field(input: unknown, ...names: string[]): string | undefined {
  if (input === null || typeof input !== "object") return undefined;
  for (const name of names) {
    const value = (input as Record<string, unknown>)[name];
    if (typeof value === "string" && value.length > 0) return value;
  }
  return undefined;
}

/**
 * A one-line description of a tool call for status displays:
 * `Write src/x.ts`, `Bash: git commit -m "…"`, `Grep TODO`, or the tool name alone.
 */
export function describeToolUse(name: string, input: unknown): string {
  const command = field(input, "command", "cmd");
  if (command !== undefined) return shorten(`${name}: ${command}`);
  const target = field(input, "file_path", "notebook_path", "path", "pattern", "url", "query", "description");
  return target === undefined ? name : shorten(`${name} ${target}`);
}

import type { Restriction } from "@gstack/contracts";

/**
 * Claude Code tools a dispatched task may use without asking: reading and editing inside the
 * project, the git commands that record work, and the usual test runners. Pushing, installing
 * and anything else stay refused unless the caller grants them.
 */
export const defaultAllowedTools: readonly string[] = [
  "Read",
  "Edit",
  "Write",
  "Glob",
  "Grep",
  "Bash(git status:*)",
  "Bash(git diff:*)",
  "Bash(git log:*)",
  "Bash(git show:*)",
  "Bash(git add:*)",
  "Bash(git commit:*)",
  "Bash(git rm:*)",
  "Bash(git mv:*)",
  "Bash(git restore:*)",
  "Bash(git rev-parse:*)",
  "Bash(git branch --show-current:*)",
  "Bash(npm test:*)",
  "Bash(npm run test:*)",
  "Bash(pnpm test:*)",
  "Bash(pnpm run test:*)",
  "Bash(pnpm exec vitest:*)",
  "Bash(npx vitest:*)",
  "Bash(yarn test:*)",
  "Bash(bun test:*)",
  "Bash(pytest:*)",
  "Bash(python -m pytest:*)",
  "Bash(go test:*)",
  "Bash(cargo test:*)",
  "Bash(make test:*)",
];

/**
 * Claude Code `--disallowedTools` patterns for restriction rules: `exec` blocks a Bash command
 * pattern, `read` the Read tool (which also governs Grep and Glob), `write` both Edit and Write.
 */
export function restrictionsToDisallowedTools(
  restrictions: readonly Pick<Restriction, "block" | "pattern">[],
): string[] {
  const patterns: string[] = [];
  for (const restriction of restrictions) {
    const pattern = restriction.pattern.trim();
    if (restriction.block === "exec") patterns.push(`Bash(${pattern})`);
    else if (restriction.block === "read") patterns.push(`Read(${pattern})`);
    else patterns.push(`Edit(${pattern})`, `Write(${pattern})`);
  }
  return [...new Set(patterns)];
}

/** Arguments that would switch any agent's permission checks off. */
const unsafeForAll: readonly RegExp[] = [
  /^--dangerously-skip-permissions$/,
  /^--allow-dangerously-skip-permissions$/,
  /bypassPermissions/i,
  /^--dangerously-bypass-approvals-and-sandbox$/,
  /^--yolo$/,
  /^--approval-mode=yolo$/,
  /^--sandbox=danger-full-access$/,
  /^danger-full-access$/,
];

/** Short flags that mean "approve everything" only for one CLI. */
const unsafeForAgent: Readonly<Record<string, readonly RegExp[]>> = {
  gemini: [/^-y$/, /^yolo$/],
  cursor: [/^--force$/, /^-f$/],
};

/** The first argument that would disable the agent's permission checks, if any. */
export function findUnsafeArgument(args: readonly string[], agent = ""): string | undefined {
  const patterns = [...unsafeForAll, ...(unsafeForAgent[agent] ?? [])];
  return args.find((argument) => patterns.some((pattern) => pattern.test(argument)));
}

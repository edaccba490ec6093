import type { ResolverSet } from "../../resolve-template";

/** A small resolver set in the spirit of gstack's generator, for the template fixtures. */
export const fixtureResolvers: ResolverSet = {
  PREAMBLE: ({ skill }) =>
    [
      "## Preamble (run first)",
      "",
      "```bash",
      "_UPD=$(~/.claude/skills/gstack/bin/gstack-update-check 2>/dev/null || true)",
      `echo "SKILL: ${skill}"`,
      "```",
      "",
      "{{ASK_FORMAT}}",
    ].join("\n"),
  ASK_FORMAT: () => "## AskUserQuestion Format\n\nEvery AskUserQuestion names the branch.",
  BASE_BRANCH_DETECT: () => "```bash\n_BASE=$(gh repo view --json defaultBranchRef -q .defaultBranchRef.name)\n```",
  SECTION: ({ args }) => `Window: ${args.join(" ")}.`,
};

export default fixtureResolvers;

import { describe, expect, it } from "vitest";
import { inferRequiredBins } from "./infer-bins";

describe("inferRequiredBins", () => {
  it("finds programs at command position in shell blocks, after pipes, && and $(", () => {
    const markdown =
      "```bash\nFOO=1 git status | jq .\n[ -x x ] && bun run build\nN=$(gh pr view)\nsudo docker ps # uses npm\n```\n";
    expect(inferRequiredBins(markdown)).toEqual(["bun", "docker", "gh", "git", "jq"]);
  });

  it("declares the browse binary when $B is used, and reads inline commands", () => {
    expect(inferRequiredBins("Run `$B goto x` then `codex review`.\n")).toEqual(["browse", "codex"]);
  });

  it("ignores prose, non-shell blocks and arguments", () => {
    expect(
      inferRequiredBins('Use git and gh.\n\n```json\n{"git": 1}\n```\n\n```bash\necho git\n```\n'),
    ).toEqual([]);
  });
});

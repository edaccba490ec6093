import { RESUME_PROMPT_MAX } from "@gstack/contracts";
import { describe, expect, it } from "vitest";
import { checkpointToHandoff, parseCheckpoint, timeFromCheckpointName } from "./checkpoint-handoff";

const checkpointText = `---
status: in-progress
branch: garrytan/auth-flow
timestamp: 2026-04-03T14:30:00Z
session_duration_s: "1260"
files_modified:
  - src/auth/refresh.ts
  - test/auth/refresh-rotation.test.ts
---

## Working on: JWT refresh rotation

### Summary
Schema migration and middleware skeleton landed.

### Decisions Made
- Rotate on every use.

### Remaining Work
1. Fix the expiry edge case in refresh-rotation.test.ts:47.

### Notes
Old tokens must fail on first reuse.

### Blockers
None.
`;

describe("parseCheckpoint", () => {
  it("reads frontmatter, title and sections", () => {
    expect(parseCheckpoint(checkpointText)).toEqual({
      title: "JWT refresh rotation",
      status: "in-progress",
      branch: "garrytan/auth-flow",
      timestamp: "2026-04-03T14:30:00Z",
      sessionDurationSeconds: 1260,
      filesModified: ["src/auth/refresh.ts", "test/auth/refresh-rotation.test.ts"],
      summary: "Schema migration and middleware skeleton landed.",
      decisions: "- Rotate on every use.",
      remainingWork: "1. Fix the expiry edge case in refresh-rotation.test.ts:47.",
      notes: "Old tokens must fail on first reuse.\n\nBlockers:\nNone.",
    });
  });

  it("reads a checkpoint without frontmatter and rejects a broken one with the line", () => {
    expect(parseCheckpoint("## Working on: x\n### Summary\ny\n")).toMatchObject({ title: "x", summary: "y" });
    expect(() => parseCheckpoint("---\nbranch: [\n---\n", "cp.md")).toThrow(/^cp\.md:\d+: frontmatter/);
    expect(() => parseCheckpoint("---\nfiles_modified: nope\n---\n", "cp.md")).toThrow(/files_modified/);
  });
});

describe("checkpointToHandoff", () => {
  const details = { project: "acme-baku", path: "/s/cp.md", name: "20260403-143000-jwt-refresh-rotation" };

  it("makes a pending handoff from gstack with a resume prompt built from the checkpoint", () => {
    const handoff = checkpointToHandoff(parseCheckpoint(checkpointText), details);
    expect(handoff).toMatchObject({
      from: "gstack",
      to: "openclaw",
      project: "acme-baku",
      branch: "garrytan/auth-flow",
      timestamp: "2026-04-03T14:30:00Z",
      status: "pending",
      source: "/s/cp.md",
      what_i_need: "1. Fix the expiry edge case in refresh-rotation.test.ts:47.",
      resume_prompt_generated: true,
    });
    expect(handoff.context).toBe(
      "Working on: JWT refresh rotation\n\nSchema migration and middleware skeleton landed.",
    );
    expect(handoff.state).toContain("Files modified:\n- src/auth/refresh.ts");
    expect(handoff.state).toContain("Session length: 21 min");
    expect(handoff.resume_prompt).toMatch(
      /^Continue the work saved in the gstack checkpoint "JWT refresh rotation" \(project acme-baku, branch garrytan\/auth-flow\)/,
    );
    expect(handoff.resume_prompt).toContain("Remaining work:\n1. Fix the expiry edge case");
  });

  it("takes the time from the file name when the frontmatter has none", () => {
    const handoff = checkpointToHandoff(parseCheckpoint("## Working on: x\n"), details);
    expect(handoff.timestamp).toBe("2026-04-03T14:30:00.000Z");
    expect(timeFromCheckpointName("notastamp")).toBeUndefined();
  });

  it("shortens a generated prompt to 4096 characters and says so", () => {
    const huge = checkpointText.replace("Old tokens must fail on first reuse.", "n".repeat(9000));
    const handoff = checkpointToHandoff(parseCheckpoint(huge), details);
    expect(handoff.resume_prompt!.length).toBeLessThanOrEqual(RESUME_PROMPT_MAX);
    expect(handoff.resume_prompt).toContain(
      "(Shortened to fit 4096 characters; the full text is in /s/cp.md.)",
    );
    expect(handoff.resume_prompt).toContain("Remaining work:\n1. Fix the expiry edge case");
    expect(handoff.resume_prompt_shortened).toBe(true);
  });
});

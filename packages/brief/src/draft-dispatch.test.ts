import { describe, expect, it } from "vitest";
import type { CheckpointLine, OpenWork } from "./brief-types";
import { draftDispatch } from "./draft-dispatch";

const checkpoint: CheckpointLine = {
  ref: "checkpoint:acme-baku/20261126-173000-auth",
  kind: "checkpoint",
  timestamp: "2026-11-26T17:30:00Z",
  branch: "fix/auth",
  title: "Debugging auth",
  resumePrompt: "Finish the token refresh retry in auth/session.ts.",
};
const unlanded: OpenWork = {
  id: "dispatch-old",
  project: "acme-baku",
  state: "awaiting-landing",
  branch: "gstack/dispatch-old",
  ageSeconds: 7200,
  projectDir: "/repos/baku",
  task: "Add the login page",
};

describe("draftDispatch", () => {
  it("drafts the checkpoint's resume prompt, from its branch, with the default budget and plan-first", () => {
    const result = draftDispatch({
      project: "acme-baku",
      folder: "/repos/baku",
      checkpoint,
      openWork: [unlanded],
      learnings: [{ text: "tokens live in the keychain", confidence: 9 }],
      defaultBudgetUsd: 5,
      planFirst: true,
    });
    expect(result).toEqual({
      draft: {
        project: "acme-baku",
        project_dir: "/repos/baku",
        task: checkpoint.resumePrompt,
        source: "checkpoint",
        source_ref: checkpoint.ref,
        handoff_id: checkpoint.ref,
        base: "fix/auth",
        budget_usd: 5,
        mode: "plan",
        learnings: ["tokens live in the keychain"],
      },
    });
  });

  it("without a checkpoint, carries on from the oldest unlanded branch", () => {
    const newer = { ...unlanded, id: "dispatch-new", branch: "gstack/dispatch-new", ageSeconds: 60 };
    const result = draftDispatch({
      project: "acme-baku",
      openWork: [newer, unlanded],
      learnings: [],
      planFirst: false,
    });
    expect(result).toMatchObject({
      draft: {
        project_dir: "/repos/baku",
        base: "gstack/dispatch-old",
        source: "open-work",
        source_ref: "dispatch-old",
      },
    });
    if ("draft" in result) {
      expect(result.draft.task).toContain("Add the login page");
      expect(result.draft).not.toHaveProperty("mode");
      expect(result.draft).not.toHaveProperty("budget_usd");
    }
  });

  it("drafts nothing for work that waits for the person's answer", () => {
    const waiting: OpenWork = { id: "dispatch-plan", project: "p", state: "awaiting-answer", kind: "plan" };
    expect(
      draftDispatch({ project: "p", folder: "/r", openWork: [waiting], learnings: [], planFirst: false }),
    ).toEqual({
      reason: "dispatch-plan waits for the person's answer; answer it rather than dispatch again",
    });
  });

  it("drafts nothing without a folder to work in, and says so", () => {
    const result = draftDispatch({ project: "p", checkpoint, openWork: [], learnings: [], planFirst: false });
    expect(result).toEqual({ reason: expect.stringMatching(/no folder is known/) });
  });

  it("drafts nothing when there is nothing to continue", () => {
    expect(
      draftDispatch({ project: "p", folder: "/r", openWork: [], learnings: [], planFirst: false }),
    ).toEqual({
      reason: "there is no checkpoint, handoff or unlanded work to continue",
    });
  });
});

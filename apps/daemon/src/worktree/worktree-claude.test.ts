import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { submitDispatch } from "@gstack/daemon-client";
import { scripted } from "@gstack/scripted-model";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import { type ClaudeWorld, makeClaudeWorld } from "../claude-world";
import { auditOf, completionOf, waitFor } from "../test-support";
import { checkoutSnapshot } from "./checkout-snapshot";

const REPORT =
  "Done.\n\n## What shipped\n- a file\n## Decisions made\n- none\n## Learnings logged\n- none\n## Needs human judgment\n- None";

let world: ClaudeWorld;
const git = (...args: string[]) => world.git(...args);

beforeEach(async () => {
  world = await makeClaudeWorld();
  // The person's own work in progress: a committed file they edited and staged, another they
  // edited, a private untracked note, and a stash.
  await writeFile(join(world.repo, "README.md"), "# Widget\n");
  await writeFile(join(world.repo, "notes.md"), "draft\n");
  git("add", "README.md", "notes.md");
  git("commit", "-q", "-m", "readme and notes");
  await writeFile(join(world.repo, "notes.md"), "stashed thought\n");
  git("stash", "push", "-q", "-m", "an idea for later");
  await writeFile(join(world.repo, "README.md"), "# Widget\n\nUnsaved edit.\n");
  git("add", "README.md");
  await writeFile(join(world.repo, "notes.md"), "edited, not staged\n");
  await writeFile(join(world.repo, "private.txt"), "my private notes\n");
});

afterEach(() => world.cleanup());

/** The agent may also reset, stash and check out: the person's checkout must not feel it. */
const start = (script: Parameters<ClaudeWorld["start"]>[0], settings: Record<string, unknown> = {}) =>
  world.start(script, {
    allowed_tools: ["Bash(git reset:*)", "Bash(git stash:*)", "Bash(git checkout:*)"],
    ...settings,
  });

function dispatch(id: string, extra: Record<string, unknown> = {}) {
  return {
    id,
    dispatched_by: "wintermute",
    task: `Add ${id}.txt and commit everything`,
    project: "acme-widget",
    project_dir: world.repo,
    ...extra,
  };
}

describe("a dispatch in a worktree of its own, with the real Claude Code CLI", {
  timeout: loadBudget(120_000),
}, () => {
  it("commits on its own branch while the person's checkout stays byte for byte as it was", async () => {
    const before = checkoutSnapshot(world.repo);
    await start({
      script: [
        scripted.write("hello.txt", "hello\n"),
        scripted.bash("git add -A"),
        scripted.bash("git commit -m 'Add hello.txt'"),
        scripted.bash("git reset --hard HEAD"),
        scripted.bash("git stash list"),
        scripted.text(REPORT),
      ],
    });
    await submitDispatch(world.layout, dispatch("dispatch-wt-own"));
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-wt-own"), 90_000);
    expect(completion).toMatchObject({
      status: "completed",
      commits: 1,
      branch: "gstack/dispatch-wt-own",
      base: "main",
      landing: "awaiting",
      files_changed: [{ path: "hello.txt", insertions: 1, deletions: 0 }],
    });
    expect(completion.worktree).toBe(join(world.root, "worktrees", "acme-widget", "dispatch-wt-own"));
    expect(checkoutSnapshot(world.repo)).toEqual(before);
    // The branch holds exactly the agent's file on top of the base.
    expect(git("diff", "--name-only", "main", "gstack/dispatch-wt-own")).toBe("hello.txt");
    // The agent ran in the worktree, not in the checkout.
    const init = world.model?.agentRequests()[0]?.promptText ?? "";
    expect(init).toContain("dispatch-wt-own");
    const report = await readFile(world.layout.dispatch.completedReport("dispatch-wt-own"), "utf8");
    expect(report).toContain("Branch `gstack/dispatch-wt-own` from `main`");
    expect(report).toContain("- hello.txt +1 −0");
    expect(report).toContain("gstack-dispatch land dispatch-wt-own");
    const created = (await auditOf(world.layout)).filter((event) => event.event === "worktree_created");
    expect(created).toHaveLength(1);
  });

  it("runs two dispatches in one repository at once, each committing with git add -A onto its own branch", async () => {
    const before = checkoutSnapshot(world.repo);
    await start(
      {
        respond: (request) => {
          const id = /dispatch-wt-(?:one|two)/.exec(request.firstUserText ?? request.promptText)?.[0];
          if (!id) return scripted.text(REPORT);
          const steps = [
            scripted.write(`${id}.txt`, `work of ${id}\n`),
            scripted.bash("git add -A"),
            scripted.bash(`git commit -m 'Add ${id}.txt'`),
            scripted.text(REPORT),
          ];
          return steps[Math.min(request.toolResultCount, steps.length - 1)];
        },
        script: [scripted.text(REPORT)],
      },
      { max_concurrent: 2 },
    );
    await Promise.all([
      submitDispatch(world.layout, dispatch("dispatch-wt-one")),
      submitDispatch(world.layout, dispatch("dispatch-wt-two")),
    ]);
    const one = await waitFor(() => completionOf(world.layout, "dispatch-wt-one"), 90_000);
    const two = await waitFor(() => completionOf(world.layout, "dispatch-wt-two"), 90_000);
    expect(one).toMatchObject({ status: "completed", commits: 1, branch: "gstack/dispatch-wt-one" });
    expect(two).toMatchObject({ status: "completed", commits: 1, branch: "gstack/dispatch-wt-two" });
    expect(git("diff", "--name-only", "main", "gstack/dispatch-wt-one")).toBe("dispatch-wt-one.txt");
    expect(git("diff", "--name-only", "main", "gstack/dispatch-wt-two")).toBe("dispatch-wt-two.txt");
    // Both ran at the same time: the second started before the first ended.
    const spawned = (await auditOf(world.layout)).filter((event) => event.event === "spawned");
    expect(spawned).toHaveLength(2);
    expect(checkoutSnapshot(world.repo)).toEqual(before);
  });

  it("retries in the same worktree and resumes the same Claude Code session, so the agent keeps what it knew", async () => {
    let secondAttemptRequests = 0;
    await start({
      respond: (request) => {
        if (request.promptText.includes("This is attempt 2")) {
          const steps = [
            scripted.bash("git add -A"),
            scripted.bash("git commit -m 'Add hello.txt'"),
            scripted.text(REPORT),
          ];
          return steps[Math.min(secondAttemptRequests++, steps.length - 1)];
        }
        // The first attempt writes its file, then the API turns it away.
        return request.toolResultCount === 0
          ? scripted.write("hello.txt", "hello\n")
          : scripted.rateLimited();
      },
      script: [scripted.text(REPORT)],
    });
    await submitDispatch(world.layout, dispatch("dispatch-wt-resume"));
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-wt-resume"), 90_000);
    expect(completion).toMatchObject({ status: "completed", retries: 1, commits: 1 });
    expect(git("diff", "--name-only", "main", "gstack/dispatch-wt-resume")).toBe("hello.txt");
    const resumed =
      world.model?.agentRequests().filter((request) => request.promptText.includes("This is attempt 2")) ??
      [];
    expect(resumed.length).toBeGreaterThan(0);
    // The conversation goes on: it opens with the first attempt's prompt and holds its Write.
    const first = resumed[0];
    expect(first?.firstUserText).toContain("dispatch-wt-resume");
    expect(first?.firstUserText).not.toContain("This is attempt 2");
    expect(first?.toolResultCount).toBeGreaterThanOrEqual(1);
    const created = (await auditOf(world.layout)).filter((event) => event.event === "worktree_created");
    expect(created).toHaveLength(1);
  });
});

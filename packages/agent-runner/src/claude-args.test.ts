import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { adapterFor, expandCommand } from "./agent-adapter";
import { AgentRunnerError } from "./agent-runner-error";
import { buildClaudeArgs } from "./claude-args";
import { defaultAllowedTools, restrictionsToDisallowedTools } from "./tool-permissions";

describe("buildClaudeArgs", () => {
  it("runs non-interactively in acceptEdits with stream-json, grants and bans, then the prompt after --", () => {
    const args = buildClaudeArgs({
      prompt: "-fix the build",
      allowedTools: ["Bash(make:*)"],
      disallowedTools: ["Bash(rm -rf:*)"],
      maxTurns: 30,
    });
    expect(args.slice(0, 6)).toEqual([
      "--print",
      "--permission-mode",
      "acceptEdits",
      "--output-format",
      "stream-json",
      "--verbose",
    ]);
    const allowed = args.slice(args.indexOf("--allowedTools") + 1, args.indexOf("--disallowedTools"));
    expect(allowed).toEqual([...defaultAllowedTools, "Bash(make:*)"]);
    expect(allowed).toContain("Bash(git commit:*)");
    expect(allowed.some((tool) => tool.includes("git push"))).toBe(false);
    expect(args.slice(args.indexOf("--disallowedTools") + 1, args.indexOf("--max-turns"))).toEqual([
      "Bash(rm -rf:*)",
    ]);
    expect(args.slice(-4)).toEqual(["--max-turns", "30", "--", "-fix the build"]);
  });

  it("passes a spend cap as --max-budget-usd before the prompt, and refuses one that is no amount", () => {
    const args = buildClaudeArgs({ prompt: "fix it", maxBudgetUsd: 2.5 });
    expect(args.slice(args.indexOf("--max-budget-usd"), args.indexOf("--max-budget-usd") + 2)).toEqual([
      "--max-budget-usd",
      "2.5",
    ]);
    expect(args.slice(-2)).toEqual(["--", "fix it"]);
    expect(buildClaudeArgs({ prompt: "fix it" })).not.toContain("--max-budget-usd");
    expect(() => buildClaudeArgs({ prompt: "x", maxBudgetUsd: 0 })).toThrow(AgentRunnerError);
  });

  it("never asks for bypassPermissions, whatever the options", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }),
        fc.array(fc.string()),
        fc.array(fc.string()),
        fc.option(fc.integer({ min: 1, max: 500 }), { nil: undefined }),
        (prompt, allowedTools, disallowedTools, maxTurns) => {
          const args = buildClaudeArgs({ prompt, allowedTools, disallowedTools, maxTurns });
          const options = args.slice(0, args.lastIndexOf("--"));
          expect(options.some((argument) => /bypassPermissions|dangerously/i.test(argument))).toBe(false);
          expect(options[options.indexOf("--permission-mode") + 1]).toBe("acceptEdits");
          expect(args.at(-1)).toBe(prompt);
        },
      ),
    );
  });

  it("refuses extra arguments and configured commands that bypass permissions", () => {
    for (const extraArgs of [
      ["--dangerously-skip-permissions"],
      ["--permission-mode", "bypassPermissions"],
    ]) {
      expect(() => buildClaudeArgs({ prompt: "x", extraArgs })).toThrow(
        /never run with permission checks bypassed/,
      );
    }
    expect(() =>
      expandCommand(
        { command: ["claude", "-p", "--permission-mode=bypassPermissions", "{prompt}"] },
        "x",
        "claude",
      ),
    ).toThrow(AgentRunnerError);
    expect(() =>
      expandCommand(
        { command: ["codex", "exec", "--dangerously-bypass-approvals-and-sandbox"] },
        "x",
        "codex",
      ),
    ).toThrow();
    expect(() => expandCommand({ command: ["gemini", "-y", "-p", "{prompt}"] }, "x", "gemini")).toThrow();
    expect(() =>
      expandCommand({ command: ["npx", "-y", "some-agent", "{prompt}"] }, "x", "custom"),
    ).not.toThrow();
  });

  it("passes a model and extra arguments through the adapters, refusing bypass flags", () => {
    const claudeLine = adapterFor("claude").commandLine({
      prompt: "p",
      model: "opus",
      extraArgs: ["--append-system-prompt", "Be brief."],
    });
    expect(claudeLine.args.slice(-6)).toEqual([
      "--model",
      "opus",
      "--append-system-prompt",
      "Be brief.",
      "--",
      "p",
    ]);
    expect(adapterFor("codex").commandLine({ prompt: "p", model: "o4" }).args).toContain("o4");
    expect(() =>
      adapterFor("codex").commandLine({
        prompt: "p",
        extraArgs: ["--dangerously-bypass-approvals-and-sandbox"],
      }),
    ).toThrow(AgentRunnerError);
    expect(() =>
      adapterFor("claude").commandLine({ prompt: "p", extraArgs: ["--dangerously-skip-permissions"] }),
    ).toThrow(AgentRunnerError);
  });

  it("sends a long prompt on stdin instead of as an argument", () => {
    const long = "x".repeat(70 * 1024);
    const line = adapterFor("claude").commandLine({ prompt: long });
    expect(line.stdin).toBe(long);
    expect(line.args).not.toContain(long);
    expect(line.args).not.toContain("--");
    expect(adapterFor("claude").commandLine({ prompt: "short" }).stdin).toBeUndefined();
  });

  it("rejects an empty prompt and a bad turn limit", () => {
    expect(() => buildClaudeArgs({ prompt: "" })).toThrow(/prompt is empty/);
    expect(() => buildClaudeArgs({ prompt: "x", maxTurns: 0 })).toThrow(/maxTurns/);
  });
});

describe("restrictionsToDisallowedTools", () => {
  it("maps exec, read and write rules to Claude Code tool patterns", () => {
    expect(
      restrictionsToDisallowedTools([
        { block: "exec", pattern: "git push:*" },
        { block: "read", pattern: "./.env" },
        { block: "write", pattern: "migrations/**" },
        { block: "exec", pattern: "git push:*" },
      ]),
    ).toEqual(["Bash(git push:*)", "Read(./.env)", "Edit(migrations/**)", "Write(migrations/**)"]);
  });
});

describe("expandCommand", () => {
  it("puts the prompt where {prompt} stands, or last", () => {
    expect(expandCommand({ command: ["codex", "exec", "--json", "{prompt}"] }, "do it", "codex")).toEqual({
      file: "codex",
      args: ["exec", "--json", "do it"],
      env: {},
    });
    expect(
      expandCommand({ command: ["agent", "--task={prompt}!"], env: { A: "1" } }, "x", "custom", "/bin/agent"),
    ).toEqual({
      file: "/bin/agent",
      args: ["--task=x!"],
      env: { A: "1" },
    });
    expect(expandCommand({ command: ["agent", "run"] }, "x", "custom").args).toEqual(["run", "x"]);
  });

  it("knows the default commands and refuses an unknown agent without a command", () => {
    expect(adapterFor("codex").commandLine({ prompt: "p" }).args).toEqual([
      "exec",
      "--json",
      "--sandbox",
      "workspace-write",
      "--skip-git-repo-check",
      "--",
      "p",
    ]);
    expect(adapterFor("codex").commandLine({ prompt: "p", gitDirectories: ["/r/.git"] }).args).toContain(
      'sandbox_workspace_write.writable_roots=["/r/.git"]',
    );
    expect(adapterFor("claude").commandLine({ prompt: "p" }).args).toContain("acceptEdits");
    expect(() => adapterFor("aider")).toThrow(/configure a command/);
    expect(
      adapterFor("aider", { command: ["aider", "--message", "{prompt}"] }).commandLine({ prompt: "p" }).args,
    ).toEqual(["--message", "p"]);
  });
});

import { realpathSync } from "node:fs";
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gstackLayout } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkAcpAgents, checkAgents, checkConfig, type DoctorContext } from "./doctor-checks";

const modules = join(import.meta.dirname, "..", "..", "node_modules");
const acpAgent = join(modules, ".bin", "claude-code-acp");
const claudeExecutable = realpathSync(join(modules, "@anthropic-ai", "claude-code", "bin", "claude.exe"));

let home: string;
let context: DoctorContext;

beforeEach(async () => {
  home = await realpath(await mkdtemp(join(tmpdir(), "gstack-doctor-acp-")));
  context = {
    layout: gstackLayout(join(home, ".gstack")),
    env: { HOME: home, PATH: process.env.PATH ?? "" },
    home,
    platform: "linux",
  };
  await mkdir(join(home, ".gstack"));
});

afterEach(() => rm(home, { recursive: true, force: true }));

async function acpChecks(agents: string) {
  await writeFile(context.layout.config, `dispatch:\n  agents:\n${agents}`);
  const { settings } = await checkConfig(context);
  return checkAcpAgents(context, settings);
}

describe("doctor: each configured ACP agent starts and answers initialize", () => {
  it("passes the real claude-code-acp adapter under a name the user gives it, naming it", async () => {
    const checks = await acpChecks(
      [
        "    my-acp-agent:",
        `      command: [${JSON.stringify(acpAgent)}]`,
        "      protocol: acp",
        "      env:",
        `        CLAUDE_CODE_EXECUTABLE: ${JSON.stringify(claudeExecutable)}`,
        "",
      ].join("\n"),
    );
    expect(checks).toHaveLength(1);
    expect(checks[0]).toMatchObject({ name: "acp:my-acp-agent", status: "ok" });
    expect(checks[0]?.detail).toContain("@zed-industries/claude-code-acp");
    expect(checks[0]?.detail).toContain("can load sessions");
  });

  it("fails an agent that exits instead of answering, saying why and what to fix", async () => {
    const checks = await acpChecks(
      [
        "    cursor:",
        '      command: ["sh", "-c", "echo not an agent >&2; exit 2"]',
        "      protocol: acp",
        "",
      ].join("\n"),
    );
    expect(checks[0]).toMatchObject({ name: "acp:cursor", status: "fail" });
    expect(checks[0]?.detail).toContain("exited with code 2 before answering: not an agent");
    expect(checks[0]?.fix).toContain("dispatch.agents.cursor");
  });
});

describe("doctor: an agent the user names with a plain command line", () => {
  it("is looked for on PATH like the built-in ones, and fails naming what to fix when missing", async () => {
    await writeFile(
      context.layout.config,
      [
        "dispatch:",
        "  agents:",
        "    my-shell-agent:",
        '      command: ["sh", "-c", "{prompt}"]',
        "    my-missing-agent:",
        '      command: ["/nonexistent/agent", "{prompt}"]',
        "",
      ].join("\n"),
    );
    const { settings } = await checkConfig(context);
    const checks = await checkAgents(context, settings);
    const byName = Object.fromEntries(checks.map((check) => [check.name, check]));
    expect(byName["agent:my-shell-agent"]?.detail).toContain("/sh");
    expect(byName["agent:my-missing-agent"]).toMatchObject({
      status: "fail",
      detail: "'/nonexistent/agent' is not on PATH",
      fix: "install /nonexistent/agent or remove dispatch.agents.my-missing-agent from config.yaml",
    });
  });
});

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type ScriptedModel, startScriptedModel } from "./scripted-model-server";
import { scripted } from "./scripted-turn";

const claude = join(import.meta.dirname, "..", "node_modules", ".bin", "claude");
const folders: string[] = [];
let model: ScriptedModel | undefined;

afterEach(async () => {
  await model?.close();
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function runClaude(cwd: string, env: Record<string, string>, prompt: string) {
  return new Promise<{ code: number | null; stdout: string }>((resolve, reject) => {
    const child = spawn(
      claude,
      [
        "--print",
        "--permission-mode",
        "acceptEdits",
        "--output-format",
        "stream-json",
        "--verbose",
        "--",
        prompt,
      ],
      { cwd, env: { ...process.env, ...env }, stdio: [openSync("/dev/null", "r"), "pipe", "inherit"] },
    );
    let stdout = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout }));
  });
}

describe("the real Claude Code CLI against the scripted model", () => {
  it("runs the scripted Write tool for real and sends the tool result back", async () => {
    model = await startScriptedModel({
      script: [scripted.write("note.txt", "from the script\n"), scripted.text("Wrote it.")],
    });
    const home = mkdtempSync(join(tmpdir(), "scripted-home-"));
    const work = mkdtempSync(join(tmpdir(), "scripted-work-"));
    folders.push(home, work);
    const { code, stdout } = await runClaude(work, model.claudeEnv(home), "Write note.txt");
    expect(code).toBe(0);
    expect(existsSync(join(work, "note.txt"))).toBe(true);
    expect(readFileSync(join(work, "note.txt"), "utf8")).toBe("from the script\n");
    const agentRequests = model.agentRequests();
    expect(agentRequests).toHaveLength(2);
    expect(agentRequests[0]!.firstUserText).toContain("Write note.txt");
    expect(agentRequests[1]!.toolResultCount).toBe(1);
    const result = stdout
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line))
      .find((event) => event.type === "result");
    expect(result).toMatchObject({ is_error: false, result: "Wrote it." });
  });
});

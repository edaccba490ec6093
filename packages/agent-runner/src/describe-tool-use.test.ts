import { describe, expect, it } from "vitest";
import { describeToolUse } from "./describe-tool-use";

describe("describeToolUse", () => {
  it("names the file, command or pattern a tool call is about, on one short line", () => {
    expect(describeToolUse("Write", { file_path: "src/x.ts", content: "..." })).toBe("Write src/x.ts");
    expect(describeToolUse("Bash", { command: "git commit -m 'a\n\nb'" })).toBe("Bash: git commit -m 'a b'");
    expect(describeToolUse("Grep", { pattern: "TODO" })).toBe("Grep TODO");
    expect(describeToolUse("TodoWrite", { todos: [] })).toBe("TodoWrite");
    expect(describeToolUse("Bash", null)).toBe("Bash");
    const long = describeToolUse("Bash", { command: "x".repeat(500) });
    expect(long.length).toBe(160);
    expect(long.endsWith("…")).toBe(true);
  });
});

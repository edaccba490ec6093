import { describe, expect, it } from "vitest";
import { dropHookSentences } from "./drop-hook-sentences";

describe("dropHookSentences", () => {
  it("removes a parenthesis about a hook and keeps the instruction", () => {
    expect(
      dropHookSentences(
        "After answer, log best-effort (PostToolUse hook also captures it; dedup on (source, tool_use_id) handles it):\n",
      ),
    ).toBe("After answer, log best-effort:\n");
  });

  it("removes the sentences about a hook and keeps the others", () => {
    expect(
      dropHookSentences(
        "Append the marker to the question. Without it the PreToolUse hook never auto-decides. Always include it.\n",
      ),
    ).toBe("Append the marker to the question. Always include it.\n");
  });

  it("removes a list item that only talks about a hook", () => {
    expect(dropHookSentences("- Keep this.\n- The PreToolUse hook reads it.\n- And this.\n")).toBe(
      "- Keep this.\n- And this.\n",
    );
  });

  it("leaves text without hook talk untouched", () => {
    const text = "Nothing about hooks here, only a hook for a coat.\n";
    expect(dropHookSentences(text)).toBe(text);
  });
});

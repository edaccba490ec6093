/** Stream-json lines shaped like a real Claude Code session, for benchmarks. */
export function sampleLines(): string[] {
  const session = "b268ffc8-61d1-49b4-be21-b0ab007a83ef";
  const lines: Record<string, unknown>[] = [];
  for (let index = 0; index < 20; index += 1) {
    lines.push(
      {
        type: "assistant",
        message: {
          id: `msg_${index}`,
          type: "message",
          role: "assistant",
          model: "claude-opus-5-5",
          content: [
            {
              type: "text",
              text: `Step ${index}: ${"reading the code and planning the change. ".repeat(1 + (index % 5))}`,
            },
          ],
          usage: { input_tokens: 4000 + index, output_tokens: 120 },
        },
        parent_tool_use_id: null,
        session_id: session,
        uuid: `uuid-a-${index}`,
      },
      {
        type: "assistant",
        message: {
          id: `msg_${index}`,
          type: "message",
          role: "assistant",
          model: "claude-opus-5-5",
          content: [
            {
              type: "tool_use",
              id: `toolu_${index}`,
              name: index % 2 ? "Write" : "Bash",
              input:
                index % 2
                  ? { file_path: `src/file-${index}.ts`, content: "export const x = 1;\n".repeat(40) }
                  : { command: "pnpm test", description: "Run tests" },
            },
          ],
        },
        session_id: session,
        uuid: `uuid-b-${index}`,
      },
      {
        type: "user",
        message: {
          role: "user",
          content: [{ tool_use_id: `toolu_${index}`, type: "tool_result", content: "ok\n".repeat(200) }],
        },
        session_id: session,
        uuid: `uuid-c-${index}`,
        tool_use_result: { stdout: "ok\n".repeat(200), stderr: "", interrupted: false },
      },
    );
  }
  return lines.map((line) => JSON.stringify(line));
}

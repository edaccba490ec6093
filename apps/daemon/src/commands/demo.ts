import { defineCommand } from "citty";
import { fail } from "./common";

export const demo = defineCommand({
  meta: {
    name: "demo",
    description: "Run one dispatch end to end offline (real Claude Code CLI, scripted model)",
  },
  args: { keep: { type: "boolean", description: "keep the temporary folder" } },
  async run({ args }) {
    const { runDemo } = await import("../demo");
    try {
      const ok = await runDemo({ keep: Boolean(args.keep), out: (text) => process.stdout.write(text) });
      process.exit(ok ? 0 : 1);
    } catch (error) {
      fail(error);
    }
  },
});

import { defineCommand } from "citty";
import { commandMeta } from "./command-meta";
import { fail } from "./common";

export const demo = defineCommand({
  meta: commandMeta.demo,
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

import { discardDispatch, landDispatch } from "@gstack/daemon-client";
import { defineCommand } from "citty";
import { commandMeta } from "./command-meta";
import { fail, layoutOf, rootArg } from "./common";

export const land = defineCommand({
  meta: commandMeta.land,
  args: {
    ...rootArg,
    id: { type: "positional", description: "dispatch id", required: true },
    pr: { type: "boolean", description: "push the branch to the remote and open a pull request with gh" },
  },
  async run({ args }) {
    try {
      const answer = await landDispatch(layoutOf(args), args.id, { pr: args.pr === true });
      process.stdout.write(`${args.id}: ${answer.message}\n`);
    } catch (error) {
      fail(error);
    }
  },
});

export const discard = defineCommand({
  meta: commandMeta.discard,
  args: {
    ...rootArg,
    id: { type: "positional", description: "dispatch id", required: true },
    force: { type: "boolean", description: "throw away commits that were never landed" },
  },
  async run({ args }) {
    try {
      const answer = await discardDispatch(layoutOf(args), args.id, { force: args.force === true });
      process.stdout.write(`${args.id}: ${answer.message}\n`);
    } catch (error) {
      fail(error);
    }
  },
});

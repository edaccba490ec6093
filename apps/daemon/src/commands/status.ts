import { defineCommand } from "citty";
import { commandMeta } from "./command-meta";
import { rootArg } from "./common";
import { runStatus } from "./status-run";

export const status = defineCommand({
  meta: commandMeta.status,
  args: {
    ...rootArg,
    id: { type: "positional", description: "one dispatch id (default: all sessions)", required: false },
    json: {
      type: "boolean",
      description: "print the list-sessions response (or the dispatch snapshot) as JSON",
    },
  },
  run: ({ args }) => runStatus({ root: args.root, id: args.id, json: args.json }),
});

import { defineCommand } from "citty";

/** The CLI's own name, version and description. */
export const cliMeta = {
  name: "gstack-handoff",
  version: "0.1.0",
  description: "Write, find and resume handoffs between gstack and OpenClaw",
};

/**
 * Name and one-line description of every command, kept apart from the commands so the
 * top-level help can list them without loading contracts, yaml or the store.
 */
export const commandMeta = {
  write: {
    name: "write",
    description: "Write a new handoff (from flags, a Markdown file, or stdin with --file -)",
  },
  list: { name: "list", description: "List handoffs and gstack checkpoints, newest first" },
  show: { name: "show", description: "Show one handoff (id, or checkpoint:{project}/{name})" },
  resume: {
    name: "resume",
    description: "Print the resume prompt of a handoff, or with --dispatch hand it to the dispatch daemon",
  },
  pick: { name: "pick", description: "Mark a handoff picked up" },
};

/** The command tree with names and descriptions only, for the top-level help and version. */
export const commandOutline = defineCommand({
  meta: cliMeta,
  subCommands: Object.fromEntries(Object.values(commandMeta).map((meta) => [meta.name, { meta }])),
});

/**
 * Name and one-line description of every command. Kept apart from the commands themselves
 * so the top-level help can list them without loading any command or its dependencies.
 */
export const commandMeta = {
  log: { name: "log", description: "Record a finished piece of work" },
  week: { name: "week", description: "List one week's entries" },
  ship: {
    name: "ship",
    description: 'Summarise what was shipped (default: this week) — "what did I ship this week"',
  },
  query: {
    name: "query",
    description: "List entries by project, skill, dispatcher and time (default: all weeks)",
  },
  last: {
    name: "last",
    description: "When did I last work on X: the latest entry for a project, skill or dispatcher",
  },
  "import-timeline": {
    name: "import-timeline",
    description: "Add completed events from gstack's projects/{slug}/timeline.jsonl (safe to repeat)",
  },
} as const;

/** The command names, in the order the help lists them. */
export type CommandName = keyof typeof commandMeta;

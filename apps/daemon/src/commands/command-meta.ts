/**
 * Each command's name and description, kept apart from its code so the top-level help lists
 * them without loading any command.
 */
export const commandMeta = {
  run: { name: "run", description: "Run the daemon in the foreground (what launchd/systemd start)" },
  status: {
    name: "status",
    description:
      "Show running and queued dispatches with live progress and the most recent endings, or one dispatch by id",
  },
  logs: {
    name: "logs",
    description:
      "Print one dispatch's agent actions (with --follow, as they happen) and its report at the end",
  },
  submit: {
    name: "submit",
    description:
      "Hand a dispatch to the daemon, from a file or described with --task and flags (flags given with a file replace the fields they name; validated, signed when a secret exists): through its service API when it runs, else as a file it takes at start",
  },
  cancel: {
    name: "cancel",
    description: "Cancel a queued or running dispatch (its whole process group is stopped)",
  },
  land: {
    name: "land",
    description:
      "Bring a finished dispatch's branch into its base (fast-forward, else a merge commit; refuses on uncommitted changes or a conflict); --pr pushes it and opens a pull request",
  },
  answer: {
    name: "answer",
    description:
      'Answer a dispatch waiting for a person: approve, revise "<what to change>" or reject "<why>"',
  },
  discard: {
    name: "discard",
    description:
      "Remove a finished dispatch's worktree and branch (--force when its commits were never landed)",
  },
  install: {
    name: "install",
    description:
      "Install the daemon as a launchd agent (macOS) or systemd user service (Linux); with --clawvisor, the gstack-coding service for clawvisor-local",
  },
  uninstall: {
    name: "uninstall",
    description:
      "Remove the service, the OpenClaw plugin and the installed commands; the state root stays unless --purge",
  },
  doctor: {
    name: "doctor",
    description:
      "Check the set-up (Node, agent CLIs, config, secrets, state, daemon, service, plugin), each with its fix",
  },
  "clawvisor-serve": {
    name: "clawvisor-serve",
    description:
      "Serve the gstack-coding Clawvisor service on CLAWVISOR_SOCKET (started by clawvisor-local from service.yaml)",
  },
  demo: {
    name: "demo",
    description: "Run one dispatch end to end offline (real Claude Code CLI, scripted model)",
  },
} as const;

export type CommandName = keyof typeof commandMeta;

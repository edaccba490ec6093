/** Arguments every command shares. */
export const commonArgs = {
  root: { type: "string", description: "gstack state root (default: $GSTACK_HOME, else ~/.gstack)" },
  workspace: {
    type: "string",
    description: "OpenClaw workspace (default: $OPENCLAW_WORKSPACE_DIR, else ~/.openclaw/workspace)",
  },
  project: {
    type: "string",
    description: "gstack project slug (default: from $GSTACK_PROJECT_SLUG or the git remote)",
  },
  json: { type: "boolean", description: "print the result as JSON", default: false },
} as const;

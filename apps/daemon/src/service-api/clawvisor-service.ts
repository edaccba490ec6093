import { SERVICE_API_ROUTES } from "@gstack/contracts";
import { stringify } from "yaml";

/** The id of the Clawvisor local service, and the folder it is installed in. */
export const CLAWVISOR_SERVICE_ID = "gstack-coding";

/** What the service needs to start the front: absolute paths, as clawvisor-local runs it. */
export interface ClawvisorServiceSpec {
  node: string;
  /** The daemon's built cli.js. */
  cli: string;
  gstackHome: string;
}

interface ActionParam {
  name: string;
  type: "string";
  required?: boolean;
  default?: string;
  description: string;
}

interface ServiceAction {
  id: string;
  name: string;
  description: string;
  method: string;
  path: string;
  timeout: string;
  body?: string;
  body_format?: "json";
  params?: ActionParam[];
}

const dispatchIdParam: ActionParam = {
  name: "dispatch_id",
  type: "string",
  required: true,
  description: "The dispatch's id (dispatch-…), as spawn-session answered it.",
};

/** The five actions, each from the route the daemon serves it on. */
export function clawvisorActions(): ServiceAction[] {
  const route = (action: keyof typeof SERVICE_API_ROUTES) => SERVICE_API_ROUTES[action];
  return [
    {
      id: "spawn-session",
      name: "Spawn a coding session",
      description:
        "Hands one dispatch to the gstack dispatch daemon, which checks it (schema, signature, trusted repos, ttl, id not taken) and queues it. Answers the queue position; the result comes later (get-completion, or the completion callback).",
      ...route("spawn-session"),
      timeout: "30s",
      body: '{"dispatch": "{{dispatch}}"}',
      body_format: "json",
      params: [
        {
          name: "dispatch",
          type: "string",
          required: true,
          description:
            "The dispatch document as JSON text (signed with source_signature when the daemon requires it).",
        },
      ],
    },
    {
      id: "check-status",
      name: "Check a session",
      description:
        "Where one dispatch is now: pending, queued (with its position), running or retrying (with progress), or ended. Not a result unless terminal is true.",
      ...route("check-status"),
      timeout: "15s",
      params: [dispatchIdParam],
    },
    {
      id: "get-completion",
      name: "Get a session's completion",
      description:
        "The terminal snapshot with the completion report once the dispatch has ended; until then 'still running' with progress. Only this attempt's commits and artifacts are under run.",
      ...route("get-completion"),
      timeout: "15s",
      params: [dispatchIdParam],
    },
    {
      id: "cancel-session",
      name: "Cancel a session",
      description:
        "Cancels a queued or running dispatch (its whole process group is stopped). A dispatch that already ended is left as it is, and the answer says how it ended.",
      ...route("cancel-session"),
      timeout: "30s",
      body: '{"dispatch_id": "{{dispatch_id}}", "reason": "{{reason}}"}',
      body_format: "json",
      params: [
        dispatchIdParam,
        {
          name: "reason",
          type: "string",
          default: "cancelled through Clawvisor",
          description: "Why, for the audit log and the report.",
        },
      ],
    },
    {
      id: "list-sessions",
      name: "List sessions",
      description: "Running and queued dispatches, with the queue depth and max_concurrent.",
      ...route("list-sessions"),
      timeout: "15s",
    },
  ];
}

/**
 * The `service.yaml` of the `gstack-coding` service for clawvisor-local: a `server` service
 * whose start command is `gstack-dispatch clawvisor-serve`, health-checked on `/health`.
 */
export function renderClawvisorService(spec: ClawvisorServiceSpec): string {
  const manifest = {
    id: CLAWVISOR_SERVICE_ID,
    name: "gstack coding",
    description:
      "Runs coding agents on this machine through the gstack dispatch daemon: spawn, check, get the completion, cancel and list sessions.",
    type: "server",
    start: [spec.node, spec.cli, "clawvisor-serve"],
    startup: "eager",
    startup_timeout: 15,
    health_check: SERVICE_API_ROUTES.health.path,
    env: { GSTACK_HOME: spec.gstackHome },
    actions: clawvisorActions(),
  };
  return `# Written by 'gstack-dispatch install --clawvisor'; run it again to update.\n${stringify(manifest, { lineWidth: 0 })}`;
}

/** Where a routing table came from. */
export type RoutingSource =
  | { kind: "routing.yaml"; path: string }
  | { kind: "CLAUDE.md" | "AGENTS.md"; path: string }
  | { kind: "inline"; path?: undefined }
  | { kind: "none"; path?: undefined };

/** Something in a routing source that was skipped, with the line it is on. */
export interface RoutingWarning {
  path?: string;
  line: number;
  message: string;
}

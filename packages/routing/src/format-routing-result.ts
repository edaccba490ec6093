import type { RouteExplanation, RoutingResult } from "./resolve-routes";

function describeSource(result: RoutingResult): string {
  const { source } = result;
  if (source.kind === "none") return "no routing configuration found";
  if (source.kind === "inline") return "routes given directly";
  if (source.kind === "routing.yaml") return `routes from ${source.path}`;
  return `routes from the "## Skill routing" section of ${source.path}`;
}

function label(route: RouteExplanation): string {
  return route.line === undefined ? route.name : `${route.name} (line ${route.line})`;
}

/**
 * Renders a routing result as plain text for people: the source, what to load and use,
 * why each route matched, and the failed keys of every other route.
 */
export function formatRoutingResult(result: RoutingResult): string {
  const lines = [describeSource(result)];
  lines.push(`load: ${result.load.length > 0 ? result.load.join(", ") : "(nothing)"}`);
  lines.push(`skills: ${result.skills.length > 0 ? result.skills.join(", ") : "(none)"}`);
  for (const route of result.matched) {
    const reasons = route.checks.map((check) => check.reason);
    lines.push(`+ ${label(route)}: ${reasons.length > 0 ? reasons.join("; ") : "matches every task"}`);
  }
  for (const route of result.unmatched) {
    lines.push(
      `- ${label(route)}: ${route.failed.map((check) => `${check.key}: ${check.reason}`).join("; ")}`,
    );
  }
  for (const warning of result.warnings) {
    lines.push(`! ${warning.path ?? "routing"}:${warning.line}: ${warning.message}`);
  }
  return lines.join("\n");
}

/**
 * Prints how the handoff Markdown round trip compares with a JSON round trip of the same
 * handoff (both validated against the contract), in the same process, then the built CLI's
 * start-up against `node -e 0` (run `pnpm build` first).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type HandoffInput, parseValue } from "@gstack/contracts";
import { benchStartUp } from "../../../scripts/bench-start-up";
import { formatHandoff, parseHandoffMarkdown } from "../src/handoff-markdown";

function time(label: string, iterations: number, body: () => void): number {
  for (let index = 0; index < Math.min(100, iterations); index++) body();
  const start = performance.now();
  for (let index = 0; index < iterations; index++) body();
  const perCall = (performance.now() - start) / iterations;
  console.log(`  ${label}: ${(perCall * 1000).toFixed(1)} µs per call`);
  return perCall;
}

const paragraph = "Refresh token rotation fails on the expiry edge case; the middleware is in place. ".repeat(
  8,
);
const cases: Record<string, HandoffInput> = {
  "plain sections": {
    from: "gstack",
    to: "wintermute",
    project: "acme-baku",
    branch: "garrytan/auth-flow",
    timestamp: "2026-04-03T14:30:00Z",
    context: paragraph,
    state: `- ${paragraph}\n- ${paragraph}`,
    what_i_need: paragraph,
    resume_prompt: paragraph.repeat(3),
  },
  "verbatim sections": {
    from: "gstack",
    to: "wintermute",
    project: "acme-baku",
    timestamp: "2026-04-03T14:30:00Z",
    context: `## heading in text\n\`\`\`ts\n${paragraph}\n\`\`\`\n`,
    state: `\n${paragraph}\n`,
    resume_prompt: paragraph.repeat(3),
  },
};

for (const [name, handoff] of Object.entries(cases)) {
  console.log(`handoff round trip, ${name}:`);
  const json = time("JSON + schema", 500, () => parseValue("handoff", JSON.parse(JSON.stringify(handoff))));
  const markdown = time("Markdown + schema", 500, () => parseHandoffMarkdown(formatHandoff(handoff)));
  console.log(`  write + read ${(markdown / json).toFixed(1)}× a JSON round trip`);
}

const root = mkdtempSync(join(tmpdir(), "handoff-bench-"));
try {
  benchStartUp(join(import.meta.dirname, "..", "dist", "cli.js"), [
    { label: "gstack-handoff --help", args: ["--help"] },
    { label: "gstack-handoff list --help", args: ["list", "--help"] },
    { label: "gstack-handoff list (empty root)", args: ["list", "--root", root] },
  ]);
} finally {
  rmSync(root, { recursive: true, force: true });
}

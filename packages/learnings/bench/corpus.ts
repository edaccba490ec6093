import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { gstackLayout, openClawLayout } from "@gstack/contracts";

/** The learnings the bench and the output digest use: learning `index` of a made-up project. */
const types = ["pattern", "pitfall", "preference", "architecture", "tool", "operational", "investigation"];
const sources = ["observed", "user-stated", "inferred", "cross-model"];

export function learning(index: number) {
  return {
    skill: ["review", "ship", "investigate", "qa"][index % 4],
    type: types[index % types.length],
    key: `learning-${index}`,
    insight: `Learning ${index}: the ${index % 3 === 0 ? "payments" : "auth"} module retries twice before failing; keep \`retry.ts\` in sync with the API client (see PR #${index}).`,
    confidence: (index % 10) + 1,
    source: sources[index % sources.length],
    files: index % 2 === 0 ? [`src/module-${index % 50}.ts`, "src/api/client.ts"] : undefined,
    ts: new Date(Date.UTC(2026, 0, 1) + index * 60_000).toISOString(),
    trusted: index % 4 === 1,
  };
}

/**
 * A gstack root and an OpenClaw workspace under `folder` with project `bench`, whose
 * learnings.jsonl holds the first `count` learnings of the corpus; the memory file is not written.
 */
export async function writeBenchProject(folder: string, count: number) {
  const root = join(folder, "gstack");
  const workspace = join(folder, "workspace");
  const project = "bench";
  const learnings = gstackLayout(root).project(project).learnings;
  const memoryFile = openClawLayout(workspace).gstackMemory(project);
  await mkdir(gstackLayout(root).project(project).dir, { recursive: true });
  const lines = Array.from({ length: count }, (_, index) => JSON.stringify(learning(index)));
  await writeFile(learnings, `${lines.join("\n")}\n`);
  return { root, workspace, project, learnings, memoryFile };
}

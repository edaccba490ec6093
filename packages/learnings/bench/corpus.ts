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

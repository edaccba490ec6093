import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { gstackLayout, parseJsonLines } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createActivityLog } from "./activity-log";

const library = pathToFileURL(join(import.meta.dirname, "..", "dist", "index.js")).href;

const writerScript = `
import { createActivityLog } from ${JSON.stringify(library)};
const [root, writer, batches, perBatch, startAt] = process.argv.slice(2).map((value, index) => (index === 0 ? value : Number(value)));
const log = createActivityLog({ root });
while (Date.now() < startAt) await new Promise((resolve) => setTimeout(resolve, 2));
for (let batch = 0; batch < batches; batch++) {
  const entries = [];
  for (let item = 0; item < perBatch; item++) {
    entries.push({
      ts: new Date().toISOString(),
      project: "concurrency",
      skill: "append",
      duration: batch,
      session: "writer-" + writer,
      artifacts: ["seq:" + (batch * perBatch + item), "pad:" + "abcdefghij".repeat(((writer * 37 + batch * 11 + item) % 30) * 10)],
    });
  }
  await log.append(entries);
}
`;

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "activity-concurrent-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

function run(script: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`writer exited ${code}: ${stderr}`)),
    );
  });
}

describe("appends from many processes", () => {
  it("never tears or interleaves a line", async () => {
    const writers = 12;
    const batches = 40;
    const perBatch = 5;
    const script = join(root, "writer.mjs");
    await writeFile(script, writerScript);
    const startAt = Date.now() + 1500;
    await Promise.all(
      Array.from({ length: writers }, (_, writer) =>
        run(script, [root, String(writer), String(batches), String(perBatch), String(startAt)]),
      ),
    );

    const weeks = await createActivityLog({ root }).weeks();
    expect(weeks.length).toBeGreaterThanOrEqual(1);
    const sequences = new Map<string, number[]>();
    let total = 0;
    for (const week of weeks) {
      const file = gstackLayout(root).activity.week(week);
      const text = await readFile(file, "utf8");
      expect(text.endsWith("\n")).toBe(true);
      const { entries, problems } = parseJsonLines("activity-entry", text, { source: file });
      expect(problems).toEqual([]);
      total += entries.length;
      for (const { value } of entries) {
        const sequence = Number(value.artifacts?.[0]?.slice("seq:".length));
        const list = sequences.get(value.session!) ?? [];
        list.push(sequence);
        sequences.set(value.session!, list);
      }
    }
    expect(total).toBe(writers * batches * perBatch);
    expect(sequences.size).toBe(writers);
    for (const list of sequences.values()) {
      expect(list).toEqual(Array.from({ length: batches * perBatch }, (_, index) => index));
    }
  });
});

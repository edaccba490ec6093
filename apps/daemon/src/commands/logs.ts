import { open, readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { DaemonError, exists, readState } from "@gstack/daemon-client";
import { defineCommand } from "citty";
import { waitingLines } from "../await/awaiting";
import { describeStreamLine } from "../finish/session-log";
import { commandMeta } from "./command-meta";
import { fail, layoutOf, rootArg } from "./common";

/** The stream files of a session, start by start (each attempt and each round: `stream-1.jsonl`, `stream-2.jsonl`, …). */
async function streamFiles(sessionDir: string): Promise<string[]> {
  const names = (await readdir(sessionDir).catch(() => [] as string[])).filter((name) =>
    /^stream-\d+\.jsonl$/.test(name),
  );
  return names
    .sort((a, b) => Number(a.slice(7, -6)) - Number(b.slice(7, -6)))
    .map((name) => join(sessionDir, name));
}

export const logs = defineCommand({
  meta: commandMeta.logs,
  args: {
    ...rootArg,
    id: { type: "positional", description: "the dispatch id", required: true },
    follow: { type: "boolean", alias: "f", description: "keep printing until the dispatch ends" },
  },
  async run({ args }) {
    try {
      const layout = layoutOf(args);
      const id = String(args.id);
      const sessionDir = layout.dispatch.sessionDir(id);
      const report = layout.dispatch.completedReport(id);
      if (!(await exists(sessionDir)) && !(await exists(report))) {
        throw new DaemonError(`no dispatch ${id} has run here (nothing in ${sessionDir})`);
      }
      const offsets = new Map<string, number>();
      const pending = new Map<string, string>();
      // Prints what was added to each stream since the last look; a partial last line waits.
      const readNew = async () => {
        for (const file of await streamFiles(sessionDir)) {
          const handle = await open(file, "r");
          try {
            const from = offsets.get(file) ?? 0;
            const { size } = await handle.stat();
            if (size <= from) continue;
            const buffer = Buffer.alloc(size - from);
            await handle.read(buffer, 0, buffer.length, from);
            offsets.set(file, size);
            const text = (pending.get(file) ?? "") + buffer.toString("utf8");
            const lines = text.split("\n");
            pending.set(file, lines.pop() ?? "");
            for (const line of lines)
              for (const said of describeStreamLine(line)) process.stdout.write(`${said}\n`);
          } finally {
            await handle.close();
          }
        }
      };
      // A wait is shown whole once per round: the plan (or the gate) and how to answer it.
      let shownWait: string | undefined;
      const showWait = async (): Promise<boolean> => {
        const state = await readState(layout, id);
        const record = state?.status === "awaiting" ? state.awaiting : undefined;
        if (!record) return false;
        const key = `${record.kind} ${record.round}`;
        if (key !== shownWait) {
          shownWait = key;
          const lines = waitingLines(id, record, record.gate?.items);
          process.stdout.write(`\n${lines.join("\n")}\n`);
          if (args.follow) process.stdout.write("(--follow goes on once it is answered)\n");
        }
        return true;
      };
      await readNew();
      while (args.follow && !(await exists(report))) {
        await showWait();
        await new Promise((resolve) => setTimeout(resolve, 250));
        await readNew();
      }
      await readNew();
      if (await exists(report)) process.stdout.write(`\n${await readFile(report, "utf8")}`);
      else if (!(await showWait()))
        process.stdout.write(`(${id} has not ended; --follow prints until it does)\n`);
    } catch (error) {
      fail(error);
    }
  },
});

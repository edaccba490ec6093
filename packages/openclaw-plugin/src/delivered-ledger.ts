import { mkdir, open, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { childPath } from "@gstack/contracts";

/** How one report (a completion, or a waiting notice) reached its session. */
export interface DeliveryRecord {
  dispatch_id: string;
  session_key: string;
  via: "completed-folder" | "callback" | "awaiting-folder" | "awaiting-callback";
  /** The report's key (dispatch and outcome), as the session's history shows it. */
  key?: string;
  /** For a waiting notice: its slot (`<dispatch id>.awaiting-<round>`), the name it is recorded under. */
  slot?: string;
  /** When the session's history was seen to hold it. */
  delivered_at: string;
  /** Whether the report was also sent to the person's channel (`no-route` for a session without one). */
  person?: "sent" | "no-route" | "failed";
  /**
   * What became of the agent's answer to it on the person's channel: sent (it added to the
   * report), or not sent because it was silent or repeated the report.
   */
  answer?: "sent" | "no-route" | "failed" | "silent" | "repeat";
}

/**
 * The completions their sessions have seen, one file per dispatch under
 * `<state>/delivered/`. A file is created with O_EXCL and fsynced, so two deliverers
 * (the folder follower and the callback route, or two gateway processes) cannot both
 * record the same dispatch, and the record survives a restart of either side.
 */
export function deliveredLedger(stateDir: string) {
  const folder = join(stateDir, "delivered");
  const pathOf = (id: string) => childPath(folder, id, ".json");
  return {
    folder,
    async has(id: string): Promise<boolean> {
      try {
        await stat(pathOf(id));
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
        throw error;
      }
    },
    /** Records a delivery; false when it was already recorded (nothing is overwritten). */
    async record(entry: DeliveryRecord): Promise<boolean> {
      await mkdir(folder, { recursive: true });
      let handle: Awaited<ReturnType<typeof open>>;
      try {
        handle = await open(pathOf(entry.slot ?? entry.dispatch_id), "wx", 0o600);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
        throw error;
      }
      try {
        await handle.writeFile(`${JSON.stringify(entry)}\n`);
        await handle.sync();
      } finally {
        await handle.close();
      }
      return true;
    },
    async list(): Promise<string[]> {
      try {
        return (await readdir(folder))
          .filter((name) => name.endsWith(".json"))
          .map((name) => name.slice(0, -5));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
        throw error;
      }
    },
  };
}

export type DeliveredLedger = ReturnType<typeof deliveredLedger>;

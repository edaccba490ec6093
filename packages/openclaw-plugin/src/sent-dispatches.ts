import { join } from "node:path";
import { childPath, type ReplyTo } from "@gstack/contracts";
import { readJsonIfPresent, writeJsonAtomic } from "./atomic-json";

/** What the plugin remembers of a dispatch it submitted: whom to tell when it ends. */
export interface SentDispatch {
  id: string;
  reply_to: ReplyTo;
  task: string;
  project: string;
  sent_at: string;
}

/**
 * The dispatches this plugin submitted, one file each under `<state>/sent/`. A completion
 * carries `reply_to` itself when the daemon copies it; this record answers when it does not.
 */
export function sentDispatches(stateDir: string) {
  const folder = join(stateDir, "sent");
  return {
    async remember(record: SentDispatch): Promise<void> {
      await writeJsonAtomic(childPath(folder, record.id, ".json"), record);
    },
    async recall(id: string): Promise<SentDispatch | undefined> {
      return (await readJsonIfPresent(childPath(folder, id, ".json"))) as SentDispatch | undefined;
    },
  };
}

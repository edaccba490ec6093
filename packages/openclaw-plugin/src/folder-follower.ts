import { readdir } from "node:fs/promises";
import { DirectoryWatch } from "@gstack/contracts";

/** How often a watch that failed is tried again (and the folder scanned when it is back). */
const RENEW_MILLISECONDS = 30_000;

export interface FolderFollower {
  ready: Promise<void>;
  close(): Promise<void>;
}

/**
 * Follows one of the daemon's folders of `{name}.json` documents: every file already there at
 * start and every one that appears later is handed to `take` (at start, oldest name first and
 * one at a time; later as the system names it). `skip` lists, once per scan, names that need no
 * reading. A failed watch is renewed and the folder scanned again for what it missed.
 */
export function followJsonFolder(
  folder: string,
  take: (name: string) => Promise<void>,
  log: { warn(message: string): void },
  skip: () => Promise<ReadonlySet<string>> = async () => new Set(),
): FolderFollower {
  let closed = false;
  const pending = new Set<Promise<void>>();
  const isDocument = (name: string) => !name.startsWith(".") && name.endsWith(".json");
  const consider = (name: string) => {
    if (closed || !isDocument(name)) return;
    const work = take(name);
    pending.add(work);
    void work.finally(() => pending.delete(work));
  };
  const scan = async () => {
    const skipped = await skip();
    const names = (await readdir(folder)).filter(isDocument);
    for (const name of names.sort()) {
      if (closed) return;
      if (!skipped.has(name.slice(0, -".json".length))) await take(name);
    }
  };
  const scanLogged = () =>
    scan().catch((error: Error) => log.warn(`gstack: could not scan ${folder}: ${error.message}`));
  const watch = new DirectoryWatch(folder, {
    onName: consider,
    onUnknown: () => void scanLogged(),
    onError: (error) => log.warn(`gstack: watching ${folder} failed (${error.message}); trying again`),
  });
  const renewal = setInterval(() => {
    watch
      .renew()
      .then((renewed) => (renewed ? scanLogged() : undefined))
      .catch(() => undefined);
  }, RENEW_MILLISECONDS);
  renewal.unref();
  const ready = (async () => {
    watch.ensure();
    await scan();
  })();
  return {
    ready,
    async close() {
      closed = true;
      clearInterval(renewal);
      watch.close();
      await ready.catch(() => undefined);
      await Promise.all(pending);
    },
  };
}

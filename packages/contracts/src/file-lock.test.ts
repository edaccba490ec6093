import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { access, mkdtemp, readFile, rm, stat, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitUntil } from "../../../vitest.load-budget";
import { LockTimeoutError, processAlive, withFileLock } from "./file-lock";

const moduleUrl = pathToFileURL(join(import.meta.dirname, "file-lock.ts")).href;

/**
 * A worker process: waits for `go` (when given), then `iterations` times takes the lock and
 * does a read-modify-write of the counter. Inside the lock it also creates an `inside` marker
 * with O_EXCL, so a second holder at the same moment fails loudly (exit code 3).
 */
const workerSource = `
import { open, readFile, rm, writeFile, access } from "node:fs/promises";
const [moduleUrl, lock, counter, iterations, go, ready] = process.argv.slice(2);
const { withFileLock } = await import(moduleUrl);
if (ready) await writeFile(ready, "");
if (go) {
  for (;;) {
    try { await access(go); break; } catch { await new Promise((resolve) => setTimeout(resolve, 1)); }
  }
}
const inside = counter + ".inside";
for (let index = 0; index < Number(iterations); index++) {
  await withFileLock(lock, async () => {
    let marker;
    try { marker = await open(inside, "wx"); } catch { process.exit(3); }
    const value = Number(await readFile(counter, "utf8"));
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
    await writeFile(counter, String(value + 1));
    await marker.close();
    await rm(inside);
  }, { timeoutMs: 60000 });
}
`;

let folder: string;
let worker: string;

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), "contracts-lock-"));
  worker = join(folder, "worker.mjs");
  await writeFile(worker, workerSource);
});

afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

function runWorker(args: string[]): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [worker, moduleUrl, ...args], {
      stdio: ["ignore", "ignore", "inherit"],
    });
    child.on("error", reject);
    child.on("exit", (code) => resolve(code));
  });
}

/** The pid of a process that has already exited. */
function deadPid(): number {
  const result = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], {
    encoding: "utf8",
  });
  return Number(result.stdout);
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

describe("withFileLock across processes", () => {
  it("lets exactly one process at a time run its task", async () => {
    const lock = join(folder, "deep", "counter.lock");
    const counter = join(folder, "counter");
    await writeFile(counter, "0");
    const processes = 8;
    const iterations = 15;
    const codes = await Promise.all(
      Array.from({ length: processes }, () => runWorker([lock, counter, String(iterations)])),
    );
    expect(codes).toEqual(Array(processes).fill(0));
    expect(Number(await readFile(counter, "utf8"))).toBe(processes * iterations);
    expect(await exists(lock)).toBe(false);
  });

  it("hands a stale lock to one waiter at a time when several face it at once", async () => {
    const lock = join(folder, "counter.lock");
    const counter = join(folder, "counter");
    await writeFile(counter, "0");
    const processes = 6;
    const rounds = 3;
    for (let round = 1; round <= rounds; round++) {
      await writeFile(lock, `${deadPid()} 2026-01-01T00:00:00.000Z`);
      const go = join(folder, `go-${round}`);
      const ready = Array.from({ length: processes }, (_, index) => join(folder, `ready-${round}-${index}`));
      const running = ready.map((readyFile) => runWorker([lock, counter, "1", go, readyFile]));
      while (!(await Promise.all(ready.map(exists))).every(Boolean)) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      await writeFile(go, "");
      expect(await Promise.all(running)).toEqual(Array(processes).fill(0));
      expect(Number(await readFile(counter, "utf8"))).toBe(round * processes);
    }
    expect(await exists(lock)).toBe(false);
    expect(await exists(`${lock}.break`)).toBe(false);
  });
});

describe("withFileLock", () => {
  it("writes `pid iso-time` into the lock while the task runs and removes it afterwards", async () => {
    const lock = join(folder, "a", "b", "x.lock");
    const seen = await withFileLock(lock, async () => readFile(lock, "utf8"));
    expect(seen).toMatch(new RegExp(`^${process.pid} \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z$`));
    expect(await exists(lock)).toBe(false);
  });

  it("takes over a lock whose holder pid is dead", async () => {
    const lock = join(folder, "x.lock");
    await writeFile(lock, `${deadPid()}\n`);
    const seen = await withFileLock(lock, async () => readFile(lock, "utf8"), { timeoutMs: 5_000 });
    expect(seen.startsWith(`${process.pid} `)).toBe(true);
    expect([await exists(lock), await exists(`${lock}.break`)]).toEqual([false, false]);
  });

  it("takes over an empty lock once it is older than a few seconds, but not a fresh one", async () => {
    const lock = join(folder, "x.lock");
    await writeFile(lock, "");
    const fresh = await withFileLock(lock, async () => "never", { timeoutMs: 30 }).catch((error) => error);
    expect(LockTimeoutError.isInstance(fresh)).toBe(true);
    expect(fresh.holderPid).toBeUndefined();
    const old = new Date(Date.now() - 60_000);
    await utimes(lock, old, old);
    expect(await withFileLock(lock, async () => "taken", { timeoutMs: 5_000 })).toBe("taken");
  });

  it("takes over a lock of a live pid once it is older than staleMs", async () => {
    const lock = join(folder, "x.lock");
    await writeFile(lock, `${process.ppid} 2026-01-01T00:00:00.000Z`);
    const old = new Date(Date.now() - 10 * 60_000);
    await utimes(lock, old, old);
    expect(await withFileLock(lock, async () => "taken", { staleMs: 60_000, timeoutMs: 5_000 })).toBe(
      "taken",
    );
  });

  it("breaks a breaker file left behind by a crash", async () => {
    const lock = join(folder, "x.lock");
    await writeFile(lock, `${deadPid()} 2026-01-01T00:00:00.000Z`);
    await writeFile(`${lock}.break`, `${deadPid()} 2026-01-01T00:00:00.000Z`);
    const old = new Date(Date.now() - 60_000);
    await utimes(`${lock}.break`, old, old);
    expect(await withFileLock(lock, async () => "taken", { timeoutMs: 5_000 })).toBe("taken");
    expect([await exists(lock), await exists(`${lock}.break`)]).toEqual([false, false]);
  });

  it("gives up with a LockTimeoutError that names the path and the holder, leaving the lock alone", async () => {
    const lock = join(folder, "x.lock");
    const holder = `${process.ppid} 2026-01-01T00:00:00.000Z`;
    await writeFile(lock, holder);
    const error = await withFileLock(lock, async () => "never", { timeoutMs: 50 }).catch((caught) => caught);
    expect(LockTimeoutError.isInstance(error)).toBe(true);
    expect(LockTimeoutError.isInstance(new Error(lock))).toBe(false);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect(error.path).toBe(lock);
    expect(error.holderPid).toBe(process.ppid);
    expect(error.message).toContain(lock);
    expect(error.message).toContain(`pid ${process.ppid}`);
    expect(await readFile(lock, "utf8")).toBe(holder);
  });

  it("releases the lock when the task throws and passes the error on", async () => {
    const lock = join(folder, "x.lock");
    const failure = new Error("boom");
    await expect(withFileLock(lock, () => Promise.reject(failure))).rejects.toBe(failure);
    expect(await exists(lock)).toBe(false);
    expect(await withFileLock(lock, async () => "free again", { timeoutMs: 100 })).toBe("free again");
  });

  it("runs tasks of one process one after another", async () => {
    const lock = join(folder, "x.lock");
    const order: string[] = [];
    const task = (name: string) => async () => {
      order.push(`${name} in`);
      await new Promise((resolve) => setTimeout(resolve, 10));
      order.push(`${name} out`);
    };
    await Promise.all([
      withFileLock(lock, task("a")),
      withFileLock(lock, task("b")),
      withFileLock(lock, task("c")),
    ]);
    for (let index = 0; index < order.length; index += 2) {
      expect(order[index]!.split(" ")[0]).toBe(order[index + 1]!.split(" ")[0]);
    }
  });

  it("does not remove a lock that is no longer its own on release", async () => {
    const lock = join(folder, "x.lock");
    const other = `${process.ppid} 2026-01-01T00:00:00.000Z`;
    await withFileLock(lock, async () => {
      await rm(lock);
      await writeFile(lock, other);
    });
    expect(await readFile(lock, "utf8")).toBe(other);
  });

  it("keeps its lock fresh while a long task runs", async () => {
    const lock = join(folder, "x.lock");
    await withFileLock(
      lock,
      async () => {
        const old = new Date(Date.now() - 60_000);
        await utimes(lock, old, old);
        while ((await stat(lock)).mtimeMs <= old.getTime()) {
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      },
      { staleMs: 60 },
    );
    expect(await exists(lock)).toBe(false);
  });
});

/**
 * A zombie: `sh` starts a child in the background and then becomes `sleep`, which never collects
 * its child's exit status. The child ends only once its parent is `sleep` (a shell may collect a
 * child that ended before it execs), so it stays a zombie until the sleep is killed. (It gives up
 * waiting after a minute or so, should its parent never get that far.)
 */
const ZOMBIE_PARENT =
  "sh -c 'i=0; while [ \"$(cat /proc/$PPID/comm)\" != sleep ] && [ $i -lt 6000 ]; do i=$((i+1)); sleep 0.01; done' " +
  '& echo "$!"; exec sleep 600';

async function withZombie(use: (zombie: number) => Promise<void>): Promise<void> {
  const parent = spawn("sh", ["-c", ZOMBIE_PARENT], { stdio: ["ignore", "pipe", "ignore"] });
  try {
    let out = "";
    parent.stdout.setEncoding("utf8");
    const zombie = Number(
      await new Promise<string>((resolve) =>
        parent.stdout.on("data", (chunk: string) => {
          out += chunk;
          if (out.includes("\n")) resolve(out.trim());
        }),
      ),
    );
    const state = () => {
      try {
        const stat = readFileSync(`/proc/${zombie}/stat`, "latin1");
        return stat.slice(stat.lastIndexOf(")") + 2)[0];
      } catch {
        return undefined;
      }
    };
    await waitUntil(() => (state() === "Z" ? true : undefined), {
      idleMs: 10_000,
      what: `pid ${zombie} a zombie`,
      lastSeen: () => `state ${state() ?? "(no such process)"}`,
    });
    await use(zombie);
  } finally {
    parent.kill("SIGKILL");
  }
}

describe.runIf(process.platform === "linux")("processAlive", () => {
  it("counts a running process, and neither a dead pid nor a zombie", async () => {
    expect(processAlive(process.pid)).toBe(true);
    expect(processAlive(process.ppid)).toBe(true);
    expect(processAlive(deadPid())).toBe(false);
    await withZombie(async (zombie) => {
      // The kernel still answers for the pid; only its state says it has ended.
      expect(() => process.kill(zombie, 0)).not.toThrow();
      expect(processAlive(zombie)).toBe(false);
    });
  });

  it("lets a lock whose holder is a zombie be taken over at once", async () => {
    await withZombie(async (zombie) => {
      const lock = join(folder, "x.lock");
      await writeFile(lock, `${zombie} ${new Date().toISOString()}\n`);
      const seen = await withFileLock(lock, async () => readFile(lock, "utf8"), { timeoutMs: 5_000 });
      expect(seen.startsWith(`${process.pid} `)).toBe(true);
    });
  });
});

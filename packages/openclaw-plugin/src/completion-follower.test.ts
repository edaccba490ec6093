import { mkdir, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Completion, gstackLayout } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { loadBudget } from "../../../vitest.load-budget";
import { type CompletionInbox, followCompletedFolder } from "./completion-follower";
import { type DeliveredLedger, deliveredLedger } from "./delivered-ledger";
import type { PluginSettings } from "./plugin-settings";

/** How long an event may take to arrive. */
const WAIT = { timeout: loadBudget(10_000), interval: 10 };

let base: string;
let settings: PluginSettings;
let ledger: DeliveredLedger;
let delivered: string[];
let warnings: string[];
let follower: ReturnType<typeof followCompletedFolder> | undefined;

/** Records what reaches the inbox; like the real one, the ledger's exclusive create decides. */
const inbox: CompletionInbox = {
  async deliver({ completion }) {
    const first = await ledger.record({
      dispatch_id: completion.dispatch_id,
      session_key: "agent:main:main",
      via: "completed-folder",
      delivered_at: new Date().toISOString(),
    });
    if (!first) return "already-delivered";
    delivered.push(completion.dispatch_id);
    return "delivered";
  },
};

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), "completion-follower-"));
  const layout = gstackLayout(join(base, "gstack"));
  await mkdir(layout.dispatch.completed, { recursive: true });
  settings = { layout } as PluginSettings;
  ledger = deliveredLedger(join(base, "openclaw-state"));
  delivered = [];
  warnings = [];
});

afterEach(async () => {
  await follower?.close();
  follower = undefined;
  await rm(base, { recursive: true, force: true });
});

const completionText = (id: string) =>
  JSON.stringify({ dispatch_id: id, status: "completed", duration: 3 } satisfies Partial<Completion>);

/** Records a dispatch the way the daemon does when it accepts one. */
async function accept(id: string): Promise<void> {
  await mkdir(settings.layout.dispatch.sessionDir(id), { recursive: true });
  await writeFile(join(settings.layout.dispatch.sessionDir(id), "state.json"), JSON.stringify({ id }));
}

/** Writes a completion the way the daemon does: whole, then renamed into place. */
async function complete(id: string): Promise<void> {
  await accept(id);
  const folder = settings.layout.dispatch.completed;
  const hidden = join(folder, `.${id}.json.1.tmp`);
  await writeFile(hidden, completionText(id));
  await rename(hidden, join(folder, `${id}.json`));
}

function start() {
  follower = followCompletedFolder(settings, inbox, ledger, { warn: (message) => warnings.push(message) });
  return follower.ready;
}

describe("followCompletedFolder", () => {
  it("delivers what is waiting at start, skipping what the ledger holds without reading it", async () => {
    await complete("dispatch-a");
    await complete("dispatch-b");
    // Delivered earlier; its file is now unreadable as JSON, which a read would report.
    await writeFile(join(settings.layout.dispatch.completed, "dispatch-old.json"), "{ not json");
    await ledger.record({
      dispatch_id: "dispatch-old",
      session_key: "agent:main:main",
      via: "completed-folder",
      delivered_at: new Date().toISOString(),
    });
    await writeFile(join(settings.layout.dispatch.completed, "dispatch-a.md"), "# report");
    await start();
    expect(delivered).toEqual(["dispatch-a", "dispatch-b"]);
    expect(warnings).toEqual([]);
  });

  it("delivers each completion that appears later once, ignoring reports and hidden files", async () => {
    await start();
    await complete("dispatch-new");
    await writeFile(join(settings.layout.dispatch.completed, "dispatch-new.md"), "# report");
    await vi.waitUntil(() => delivered.includes("dispatch-new"), WAIT);
    await complete("dispatch-next");
    await vi.waitUntil(() => delivered.includes("dispatch-next"), WAIT);
    expect(delivered).toEqual(["dispatch-new", "dispatch-next"]);
    expect(warnings).toEqual([]);
  });

  it("reads a completion written in place again once, and names a file that stays broken", async () => {
    await start();
    const folder = settings.layout.dispatch.completed;
    const text = completionText("dispatch-slow");
    await accept("dispatch-slow");
    await accept("dispatch-broken");
    await writeFile(join(folder, "dispatch-slow.json"), text.slice(0, 10));
    setTimeout(() => void writeFile(join(folder, "dispatch-slow.json"), text), 50);
    await vi.waitUntil(() => delivered.includes("dispatch-slow"), WAIT);
    await writeFile(join(folder, "dispatch-broken.json"), "{ nope");
    await vi.waitUntil(() => warnings.length > 0, WAIT);
    expect(warnings[0]).toContain("dispatch-broken.json");
    expect(delivered).toEqual(["dispatch-slow"]);
  });

  it("delivers no completion the daemon did not record, nor one naming another dispatch", async () => {
    await start();
    const folder = settings.layout.dispatch.completed;
    await writeFile(join(folder, "dispatch-forged.json"), completionText("dispatch-forged"));
    await vi.waitUntil(() => warnings.some((warning) => warning.includes("dispatch-forged.json")), WAIT);
    expect(warnings.join("\n")).toContain("the daemon has no record of dispatch dispatch-forged");
    await accept("dispatch-real");
    await writeFile(join(folder, "dispatch-real.json"), completionText("dispatch-other"));
    await vi.waitUntil(() => warnings.some((warning) => warning.includes("dispatch-real.json")), WAIT);
    expect(warnings.join("\n")).toContain("it names dispatch dispatch-other, not dispatch-real");
    await complete("dispatch-true");
    await vi.waitUntil(() => delivered.includes("dispatch-true"), WAIT);
    expect(delivered).toEqual(["dispatch-true"]);
  });

  it("delivers nothing after it is closed", async () => {
    await start();
    // A second follower of the same folder, left open, with a ledger of its own: once it has
    // delivered, the closed one has been told of the same file too, had it still listened.
    const witnessed: string[] = [];
    const witnessLedger = deliveredLedger(join(base, "witness-state"));
    const witness = followCompletedFolder(
      settings,
      {
        async deliver({ completion }) {
          witnessed.push(completion.dispatch_id);
          return "delivered";
        },
      },
      witnessLedger,
      { warn: (message) => warnings.push(message) },
    );
    try {
      await witness.ready;
      await follower?.close();
      await complete("dispatch-late");
      await vi.waitUntil(() => witnessed.includes("dispatch-late"), WAIT);
      // Closing again waits for anything it had under way by then.
      await follower?.close();
      expect(delivered).toEqual([]);
    } finally {
      await witness.close();
    }
  });
});

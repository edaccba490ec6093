import { chmod, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { OpenClawGateway, OpenClawHome } from "@gstack/openclaw-testbed";
import { openclawBin, runOpenClaw } from "@gstack/openclaw-testbed";
import {
  type RecordedRequest,
  type ScriptedModel,
  type ScriptedStep,
  scripted,
} from "@gstack/scripted-model";
import { beforeAll, describe, expect, it } from "vitest";
import { loadBudget } from "../../../vitest.load-budget";
import { seedBaku } from "../../brief/src/test-world";
import { newestUserText } from "./openclaw-scripts";
import {
  agentTurn,
  bindRecordingPerson,
  chatHistory,
  type GstackWorld,
  gatewayEnv,
  pluginPackageDir,
} from "./openclaw-world";
import { recordedMessages, recordedMessagesFile, type SharedGateway } from "./real-gateway-world";

const SESSION = "agent:main:main";
const PERSON = "person-brief";
/** The person's own chat on the recording channel (their direct messages arrive here). */
const PERSON_SESSION = "agent:main:recording-person";

let world: GstackWorld;
let model: ScriptedModel;
let home: OpenClawHome;
let gateway: OpenClawGateway;
let sentFile: string;
let repo: string;

interface Block {
  type?: string;
  text?: string;
  content?: unknown;
}
interface MessageLike {
  role?: string;
  content?: unknown;
}

function messagesOf(request: RecordedRequest): MessageLike[] {
  return (request.body as { messages?: MessageLike[] } | undefined)?.messages ?? [];
}

/** The tool result the turn's newest message carries: the tool's name and its text. */
function newestToolResult(request: RecordedRequest): { name: string; text: string } | undefined {
  // The turn's newest messages since the assistant spoke (OpenClaw adds its context block after the result).
  let block: Block | undefined;
  for (const message of [...messagesOf(request)].reverse()) {
    if (message.role !== "user") break;
    if (!Array.isArray(message.content)) continue;
    block = (message.content as Block[]).find((item) => item.type === "tool_result");
    if (block) break;
  }
  if (!block) return undefined;
  const raw =
    typeof block.content === "string"
      ? block.content
      : Array.isArray(block.content)
        ? (block.content as Block[]).map((item) => item.text ?? "").join("\n")
        : "";
  try {
    const wrapped = JSON.parse(raw) as {
      tool?: { name?: string };
      result?: { content?: { text?: string }[] };
    };
    return {
      name: wrapped.tool?.name ?? "",
      text: (wrapped.result?.content ?? []).map((item) => item.text ?? "").join("\n"),
    };
  } catch {
    return { name: "", text: raw };
  }
}

function conversationText(request: RecordedRequest): string {
  return messagesOf(request)
    .map((message) =>
      typeof message.content === "string" ? message.content : JSON.stringify(message.content ?? ""),
    )
    .join("\n");
}

const call = (id: string, args: Record<string, unknown>) => scripted.toolUse("tool_call", { id, args });

/**
 * The OpenClaw agent as the bridge skill teaches it: "going to code on X" calls gstack_brief and
 * shows the brief, asking before anything is sent; a plain "yes" sends the draft the brief named;
 * a scheduled morning turn reads today's calendar and briefs each coding session on it.
 */
function briefAgent(request: RecordedRequest): ScriptedStep {
  const result = newestToolResult(request);
  if (result) {
    if (
      result.text.includes("calendar_today") ||
      result.name === "calendar_today" ||
      result.text.includes('"events"')
    ) {
      const event = /"title":\s*"(\w+) coding session"/i.exec(result.text);
      return event
        ? call("gstack_brief", { project: event[1]!.toLowerCase() })
        : scripted.text("Nothing to code today.");
    }
    if (/Brief for|Nothing is recorded/.test(result.text)) {
      const shown = result.text
        .split("\n")
        .filter((line) => !line.startsWith("Ask the person whether to send it"))
        .join("\n");
      return scripted.text(/Drafted dispatch/.test(shown) ? `${shown}\nShall I send it?` : shown);
    }
    // Several drafts wait: the agent asks which, listing them as the tool did.
    if (/Ask which one to send/.test(result.text)) return scripted.text(result.text);
    return scripted.text(result.text.split("\n")[0] ?? "Done.");
  }
  const fresh = newestUserText(request);
  const going = /going to code on (\w+)/i.exec(fresh);
  if (going) return call("gstack_brief", { project: going[1] });
  if (/today's calendar/i.test(fresh)) return call("calendar_today", {});
  const spoken = (fresh.trim().split("\n").at(-1) ?? "").replace(/^\[[^\]]*\]\s*/, "").trim();
  const said = spoken.toLowerCase();
  // The person names a draft the agent listed.
  const named = /\b(draft-[\w-]+)/.exec(spoken);
  if (named && /^(send|yes)\b/.test(said)) return call("gstack_send_draft", { draft_id: named[1] });
  if (said === "yes" || said === "go") {
    // The id the brief in this conversation shows; none when the brief came from a scheduled run.
    const drafts = [
      ...conversationText(request).matchAll(
        /gstack_send_draft with draft_id (draft-[\w-]+)|Drafted dispatch (draft-[\w-]+) \(not sent\)/g,
      ),
    ];
    const last = drafts.at(-1);
    const draft = last?.[1] ?? last?.[2];
    return call("gstack_send_draft", draft ? { draft_id: draft } : {});
  }
  return scripted.text("OK.");
}

const sentMessages = () => recordedMessages(sentFile);

async function assistantSays(needle: string): Promise<string[]> {
  return (await chatHistory(gateway, SESSION))
    .filter((message) => message.role === "assistant" && (message.reply ?? "").includes(needle))
    .map((message) => message.reply ?? "");
}

async function incomingDispatches(): Promise<Record<string, unknown>[]> {
  const names = (await readdir(world.layout.dispatch.incoming).catch(() => [] as string[])).filter(
    (name) => name.endsWith(".json") && !name.startsWith("."),
  );
  return Promise.all(
    names.map(async (name) => JSON.parse(await readFile(join(world.layout.dispatch.incoming, name), "utf8"))),
  );
}

/** A checkpoint gstack wrote `hoursAgo` before now on fix/auth: the next work on acme-baku. */
async function seedCheckpoint(title: string, hoursAgo: number): Promise<void> {
  const at = new Date(Date.now() - hoursAgo * 3_600_000).toISOString();
  const stamp = at.replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  const folder = world.layout.project("acme-baku").checkpoints;
  await mkdir(folder, { recursive: true });
  await writeFile(
    join(folder, `${stamp}-${title.toLowerCase().replace(/\W+/g, "-")}.md`),
    `---\nstatus: in-progress\nbranch: fix/auth\ntimestamp: ${at}\n---\n## Working on: ${title}\n\n### Remaining Work\n- ${title}\n`,
  );
}

/** Runs the scheduled brief now, as OpenClaw's scheduler would, and waits for the run to end. */
async function runScheduledBrief(jobId: string): Promise<void> {
  const ran = await runOpenClaw(
    ["automations", "run", jobId, "--wait", "--wait-timeout", `${Math.ceil(loadBudget(180_000) / 1000)}s`],
    { home: home.home, env: gatewayEnv(gateway), timeoutMs: loadBudget(240_000) },
  );
  expect(ran.code, `${ran.stdout}\n${ran.stderr}`).toBe(0);
}

async function keptDraft(draftId: string): Promise<Record<string, unknown>> {
  return JSON.parse(await readFile(join(home.stateDir, "gstack", "drafts", `${draftId}.json`), "utf8"));
}

async function personSays(text: string): Promise<void> {
  const turn = await agentTurn(gateway, PERSON_SESSION, text);
  expect(turn.code, turn.stderr).toBe(0);
}

async function personSessionHears(needle: string): Promise<string[]> {
  return (await chatHistory(gateway, PERSON_SESSION))
    .filter((message) => message.role === "assistant" && (message.reply ?? "").includes(needle))
    .map((message) => message.reply ?? "");
}

let jobId: string;

/**
 * The morning brief on the person's world (its recording channel, and the scripted calendar the
 * world installs): the brief's own project, acme-baku, is seeded into the shared gstack root. Run
 * last on its gateway: the dispatches its drafts send stay waiting, as no daemon is started here.
 */
export function briefSuite(shared: SharedGateway): void {
  describe("the morning brief", () => {
    beforeAll(async () => {
      shared.respondWith(briefAgent);
      ({ world, model, home, gateway } = shared.real);
      sentFile = recordedMessagesFile(shared.real.scratch);
      repo = join(world.base, "baku");
      await seedBaku(world.root, repo, new Date());
      await writeFile(
        world.layout.config,
        `dispatch:\n  trusted_repos:\n    - ${world.base}\n  default_budget_usd: 4\n`,
      );
    });
    it("'going to code on baku' brings the brief into the session; 'yes' sends the draft as one ordinary dispatch", async () => {
      const waiting = await incomingDispatches();
      const turn = await agentTurn(gateway, SESSION, "going to code on baku this morning");
      expect(turn.code, turn.stderr).toBe(0);
      const [brief] = await assistantSays("Brief for acme-baku");
      expect(brief).toBeDefined();
      expect(brief).toContain(`Brief for acme-baku (${repo}):`);
      expect(brief).toMatch(
        /Last session 1\d h ago: investigate in Claude Code on fix\/auth \(unknown, 45 min\)/,
      );
      expect(brief).toContain(
        "ship dispatched on gstack/dispatch-20261124T100000-00000001 (success, shipped pr:47",
      );
      expect(brief).toContain("Open work: none.");
      expect(brief).toContain("Newest checkpoint");
      expect(brief).toContain("Debugging the auth token refresh. Resume prompt:");
      expect(brief).toContain("Top learnings: [9] Auth tokens live in the keychain, not in .env");
      expect(brief).not.toContain("push to main");
      expect(brief).toContain("Routing: use investigate, review; load docs/auth.md.");
      expect(brief).toContain(`in ${repo}, from fix/auth, on a new branch, budget $4.`);
      expect(brief).toContain("Shall I send it?");
      const draftId = /Drafted dispatch (draft-[\w-]+) \(not sent\)/.exec(brief ?? "")?.[1];
      expect(draftId).toBeDefined();
      // The brief sent nothing.
      expect(await incomingDispatches()).toEqual(waiting);

      const yes = await agentTurn(gateway, SESSION, "yes");
      expect(yes.code, yes.stderr).toBe(0);
      const dispatches = (await incomingDispatches()).filter(
        (item) => !waiting.some((earlier) => earlier.id === item.id),
      );
      expect(dispatches).toHaveLength(1);
      const draft = JSON.parse(
        await readFile(join(home.stateDir, "gstack", "drafts", `${draftId}.json`), "utf8"),
      ) as Record<string, unknown>;
      expect(dispatches[0]).toMatchObject({
        id: draft.dispatch_id,
        project: "acme-baku",
        project_dir: repo,
        task: draft.task,
        base: "fix/auth",
        budget_usd: 4,
        handoff_id: draft.source_ref,
        learnings: draft.learnings,
        reply_to: { runtime: "openclaw", session_key: SESSION },
      });
      expect(String(dispatches[0]?.task)).toMatch(/Debugging the auth token refresh/);
      expect(await assistantSays(`Dispatched ${draft.dispatch_id} (acme-baku)`)).toHaveLength(1);

      // A second yes sends nothing more.
      const again = await agentTurn(gateway, SESSION, "yes");
      expect(again.code, again.stderr).toBe(0);
      expect(await incomingDispatches()).toHaveLength(waiting.length + 1);
      expect(await assistantSays(`${draftId} was already sent as ${draft.dispatch_id}`)).toHaveLength(1);
    });

    it("a project with nothing recorded gets one honest sentence and no draft", async () => {
      const turn = await agentTurn(gateway, SESSION, "going to code on zanzibar");
      expect(turn.code, turn.stderr).toBe(0);
      const said = await assistantSays("zanzibar");
      expect(said).toEqual([
        "Nothing is recorded for zanzibar yet: no sessions, no open work, no checkpoint and no learnings. Say what to work on and it can be dispatched.",
      ]);
    });

    it("a scheduled brief, from today's calendar, reaches the person's channel once; their yes in their chat sends its draft once", async () => {
      await bindRecordingPerson(gateway, PERSON_SESSION, PERSON);
      // New work since the first test's dispatch: a checkpoint from an hour ago.
      await seedCheckpoint("Add the expired-token test", 1);
      // Set up with the bundled command, which runs `openclaw automations create` for the person.
      const openclaw = join(shared.real.scratch, "openclaw");
      await writeFile(openclaw, `#!/bin/sh\nexec "${process.execPath}" "${openclawBin()}" "$@"\n`);
      await chmod(openclaw, 0o755);
      const created = await runOpenClaw(
        [
          "schedule",
          "--cron",
          "0 9 * * 1-5",
          "--channel",
          "recording-chat",
          "--to",
          PERSON,
          "--apply",
          "--openclaw",
          openclaw,
        ],
        {
          home: home.home,
          env: gatewayEnv(gateway),
          bin: join(pluginPackageDir, "dist", "bin", "gstack-brief.js"),
          timeoutMs: loadBudget(60_000),
        },
      );
      expect(created.code, `${created.stdout}\n${created.stderr}`).toBe(0);
      const job = JSON.parse(created.stdout) as { id?: string; job?: { id?: string } };
      jobId = String(job.id ?? job.job?.id);
      expect(jobId).not.toBe("undefined");
      const before = await incomingDispatches();
      await runScheduledBrief(jobId);
      const toPerson = (await sentMessages()).filter((message) => message.to === PERSON);
      expect(toPerson).toHaveLength(1);
      const delivered = toPerson[0]?.text ?? "";
      expect(delivered).toContain("Brief for acme-baku");
      expect(delivered).toContain("Last session");
      expect(delivered).toContain("Newest checkpoint (1 h ago, fix/auth): Add the expired-token test.");
      const draftId = /Drafted dispatch (draft-[\w-]+) \(not sent\)/.exec(delivered)?.[1];
      expect(draftId, delivered).toBeDefined();
      // The calendar was read, and the brief asked for the event's project.
      const calls = model.agentRequests().map((request) => JSON.stringify(request.body));
      expect(calls.some((body) => body.includes("Baku coding session"))).toBe(true);
      // The scheduled run kept the draft in its own session and sent nothing; the draft knows where it went.
      const draft = await keptDraft(String(draftId));
      expect(draft).toMatchObject({ delivered_to: { channel: "recording-chat", to: PERSON } });
      expect(String((draft.reply_to as { session_key?: string }).session_key)).toMatch(/^agent:main:cron:/);
      expect(await incomingDispatches()).toHaveLength(before.length);

      // The person's chat never saw the id: their yes sends the one draft delivered to them.
      await personSays("yes");
      const after = await incomingDispatches();
      expect(after).toHaveLength(before.length + 1);
      const dispatch = after.find((item) => item.id === draft.dispatch_id);
      expect(dispatch).toMatchObject({
        id: draft.dispatch_id,
        project: "acme-baku",
        project_dir: repo,
        task: draft.task,
        base: "fix/auth",
        budget_usd: 4,
        handoff_id: draft.source_ref,
        learnings: draft.learnings,
        // Its report goes to the chat that said yes, on the person's channel.
        reply_to: { runtime: "openclaw", session_key: PERSON_SESSION },
      });
      expect(String(dispatch?.task)).toMatch(/Add the expired-token test/);
      expect(await personSessionHears(`Dispatched ${draft.dispatch_id} (acme-baku)`)).toHaveLength(1);

      // A second yes sends nothing more.
      await personSays("yes");
      expect(await incomingDispatches()).toHaveLength(before.length + 1);
      expect(await personSessionHears(`${draftId} was already sent as ${draft.dispatch_id}`)).toHaveLength(1);
    });

    it("with two scheduled drafts waiting, a yes without an id sends neither and asks which; the one named is sent", async () => {
      await seedCheckpoint("Document the token refresh", 0.5);
      const before = await incomingDispatches();
      const seen = (await sentMessages()).filter((message) => message.to === PERSON).length;
      await runScheduledBrief(jobId);
      await runScheduledBrief(jobId);
      const briefs = (await sentMessages()).filter((message) => message.to === PERSON).slice(seen);
      expect(briefs).toHaveLength(2);
      const ids = briefs.map(
        (message) => /Drafted dispatch (draft-[\w-]+) \(not sent\)/.exec(message.text)?.[1],
      );
      expect(ids.every(Boolean), JSON.stringify(briefs)).toBe(true);
      expect(new Set(ids).size).toBe(2);

      await personSays("yes");
      expect(await incomingDispatches()).toHaveLength(before.length);
      const [asked] = await personSessionHears("Nothing was sent: 2 drafts are waiting");
      expect(asked).toBeDefined();
      for (const id of ids) expect(asked).toContain(`- ${id}: acme-baku`);

      await personSays(`send ${ids[0]}`);
      const after = await incomingDispatches();
      expect(after).toHaveLength(before.length + 1);
      const chosen = await keptDraft(String(ids[0]));
      expect(after.find((item) => item.id === chosen.dispatch_id)).toMatchObject({
        task: chosen.task,
        reply_to: { runtime: "openclaw", session_key: PERSON_SESSION },
      });
      expect((await keptDraft(String(ids[1]))).sent).toBeUndefined();
    });

    it("the terminal command prints the same brief, reading the daemon's state", async () => {
      const shown = await runOpenClaw(["show", "baku", "--root", world.root], {
        home: home.home,
        bin: join(pluginPackageDir, "dist", "bin", "gstack-brief.js"),
        timeoutMs: loadBudget(60_000),
      });
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toContain(`Brief for acme-baku (${repo}):`);
      expect(shown.stdout).toContain("Last session");
      // The checkpoint was picked up when its draft was sent: nothing is drafted again.
      expect(shown.stdout).toContain("No pending checkpoint or handoff.");
      expect(shown.stdout).toContain("Open work: none.");
    });
  });
}

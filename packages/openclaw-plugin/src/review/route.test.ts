import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PluginSettings, resolvePluginSettings } from "../plugin-settings";
import type { ToolAnswer } from "../tool-answer";
import { signCapability } from "./capability";
import { type ReviewLinks, reviewLinks } from "./links";
import { reviewHandler } from "./route";

const ID = "dispatch-20261127T080000-0badc0de";
let base: string;
let server: Server;
let origin: string;
let settings: PluginSettings;
let links: ReviewLinks;
const calls: unknown[] = [];

async function writeState(status: string, progress?: Record<string, unknown>) {
  const now = new Date().toISOString();
  await mkdir(settings.layout.dispatch.sessionDir(ID), { recursive: true });
  await writeFile(
    join(settings.layout.dispatch.sessionDir(ID), "state.json"),
    JSON.stringify({
      id: ID,
      project: "acme",
      project_dir: base,
      agent: "claude",
      status,
      claimed_file: join(base, "none.json"),
      first_seen: now,
      queued_at: now,
      attempt: 1,
      retries: 0,
      include_learnings: false,
      ...(progress ? { progress } : {}),
      updated_at: now,
    }),
  );
}

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), "gstack-review-route-"));
  settings = resolvePluginSettings({ gstackHome: join(base, "gstack"), stateDir: join(base, "state") }, base);
  await writeState("running", {
    turns: 3,
    toolUses: 5,
    lastAction: "Bash: npm test",
    lastText: "Running the tests",
  });
  server = createServer((request, response) => void handler(request, response));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  origin = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  links = reviewLinks(settings.review, () => origin);
  const answer = async (_settings: PluginSettings, params: unknown): Promise<ToolAnswer> => {
    calls.push(params);
    return { content: [{ type: "text", text: `${ID}: landed into main` }], details: { ok: true } };
  };
  handler = reviewHandler(settings, links, { actions: { answer, land: answer } });
});
let handler: ReturnType<typeof reviewHandler>;

afterAll(async () => {
  server.close();
  await rm(base, { recursive: true, force: true });
});

/** The page's form fields, read from its HTML. */
function formOf(html: string, action: string): Record<string, string> {
  const form = html.split("<form").find((part) => part.includes(`name="do" value="${action}"`)) ?? "";
  const fields: Record<string, string> = {};
  for (const match of form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    fields[match[1] as string] = match[2] as string;
  return fields;
}

describe("the review route", () => {
  it("opens only with a capability for that page: 401 and nothing else otherwise", async () => {
    const key = await links.key();
    const future = Math.floor(Date.now() / 1000) + 600;
    const list = signCapability(key, { dispatchId: "*", expires: future, scope: "list" });
    const page = new URL(await links.dispatch(ID)).search;
    const refused = [
      "/gstack/review/d",
      `/gstack/review/d?c=${list}`,
      `/gstack/review?c=${page.slice(3)}`,
      `/gstack/review/d/other${page}`,
      `/gstack/review/d?c=${signCapability(key, { dispatchId: ID, expires: future - 1200, scope: "dispatch" })}`,
      `/gstack/review/d?c=${signCapability(Buffer.alloc(32, 1), { dispatchId: ID, expires: future, scope: "dispatch" })}`,
    ];
    for (const path of refused) {
      const response = await fetch(`${origin}${path}`);
      expect(response.status, path).toBe(401);
      expect(await response.text()).toBe("Unauthorized\n");
    }
    const opened = await fetch(`${origin}/gstack/review/d${page}`);
    expect(opened.status).toBe(200);
    expect(opened.headers.get("referrer-policy")).toBe("no-referrer");
    expect(opened.headers.get("cache-control")).toBe("no-store");
    expect(opened.headers.get("content-security-policy")).toMatch(/default-src 'none'.*script-src 'nonce-/);
    const listed = await fetch(`${origin}/gstack/review?c=${list}`);
    expect(listed.status).toBe(200);
    expect(await listed.text()).toContain("0badc0de");
  });

  it("while the agent runs, the page shows its progress and its tail answers it as JSON", async () => {
    const link = await links.dispatch(ID);
    const html = await (await fetch(link)).text();
    expect(html).toContain("3 turns, 5 tool uses, last: Bash: npm test");
    expect(html).toMatch(/<script nonce="[^"]+">/);
    const tail = await fetch(link.replace("/gstack/review/d?", "/gstack/review/d/tail?"));
    expect(await tail.json()).toEqual({
      status: "running",
      line: "3 turns, 5 tool uses, last: Bash: npm test",
      text: "Running the tests",
    });
  });

  it("a form without the page's token, or from another site, is refused; a double tap acts once", async () => {
    await writeState("finished");
    await mkdir(settings.layout.dispatch.completed, { recursive: true });
    await writeFile(
      settings.layout.dispatch.completedJson(ID),
      JSON.stringify({ dispatch_id: ID, status: "completed", duration: 1, landing: "awaiting" }),
    );
    const link = await links.dispatch(ID);
    const fields = formOf(await (await fetch(link)).text(), "land");
    expect(fields.do).toBe("land");
    const post = (body: Record<string, string>, headers: Record<string, string> = {}) =>
      fetch(link, {
        method: "POST",
        body: new URLSearchParams(body),
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      });
    expect((await post({ ...fields, csrf: "forged" })).status).toBe(403);
    expect((await post(fields, { "sec-fetch-site": "cross-site" })).status).toBe(403);
    const otherLink = await links.dispatch(ID, new Date(Date.now() + 1000));
    const elsewhere = await fetch(otherLink, {
      method: "POST",
      body: new URLSearchParams(fields),
      redirect: "manual",
    });
    expect(elsewhere.status).toBe(403);
    expect(calls).toHaveLength(0);

    // Two taps at once, then a third after both: one action, the same answer each time.
    const answers = await Promise.all([post(fields), post(fields)]);
    answers.push(await post(fields));
    expect(answers.map((answer) => answer.status)).toEqual([303, 303, 303]);
    expect(calls).toEqual([{ dispatch_id: ID, action: "land" }]);
    const shown = await (await fetch(new URL(answers[0]?.headers.get("location") ?? "", origin))).text();
    expect(shown).toContain('id="flash">landed into main</p>');
  });
});

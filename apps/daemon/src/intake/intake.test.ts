import { mkdir, mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { signDocument } from "@gstack/contracts";
import { checkProjectDir } from "@gstack/daemon-client";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkDispatch, type IntakeRules, isDispatchFileName, judgeDispatch } from "./intake";

const now = new Date("2026-11-22T12:00:00Z");
const base = { id: "dispatch-a", dispatched_by: "w", task: "t", project: "p", project_dir: "/tmp" };
const context = { source: "a.json", now, firstSeen: now, knownAgents: ["claude"] };

describe("checkDispatch", () => {
  it("accepts a valid dispatch", () => {
    expect(checkDispatch(JSON.stringify(base), context)).toMatchObject({
      ok: true,
      dispatch: { id: "dispatch-a" },
    });
  });

  it("names the field and rule of a schema violation", () => {
    const result = checkDispatch(JSON.stringify({ ...base, ttl_seconds: 5 }), context);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.refusal.rule).toBe("schema");
      expect(result.refusal.reason).toContain("ttl_seconds");
      expect(result.refusal.id).toBe("dispatch-a");
    }
  });

  it("expires from created_at, else from when the file was first seen", () => {
    const fromCreated = checkDispatch(
      JSON.stringify({ ...base, ttl_seconds: 60, created_at: "2026-11-22T11:58:00Z" }),
      context,
    );
    expect(fromCreated).toMatchObject({ ok: false, refusal: { rule: "ttl", event: "expired" } });
    const seenEarlier = checkDispatch(JSON.stringify({ ...base, ttl_seconds: 60 }), {
      ...context,
      firstSeen: new Date("2026-11-22T11:58:00Z"),
    });
    expect(seenEarlier).toMatchObject({ ok: false, refusal: { rule: "ttl" } });
    expect(checkDispatch(JSON.stringify({ ...base, ttl_seconds: 60 }), context).ok).toBe(true);
  });

  it("checks the signature against the bytes as written", () => {
    const secret = "s".repeat(32);
    const signed = { ...base, source_signature: signDocument(base, secret) };
    expect(checkDispatch(JSON.stringify(signed), { ...context, secret }).ok).toBe(true);
    expect(checkDispatch(JSON.stringify({ ...signed, task: "other" }), { ...context, secret })).toMatchObject(
      {
        refusal: { rule: "signature-mismatch" },
      },
    );
    expect(checkDispatch(JSON.stringify(base), { ...context, secret })).toMatchObject({
      refusal: { rule: "signature-missing" },
    });
  });

  it("refuses agents that are not configured", () => {
    expect(checkDispatch(JSON.stringify({ ...base, target_agent: "cursor" }), context)).toMatchObject({
      refusal: { rule: "target-agent" },
    });
  });
});

describe("isDispatchFileName", () => {
  it("takes visible json files only", () => {
    expect(isDispatchFileName("dispatch-a.json")).toBe(true);
    expect(isDispatchFileName(".dispatch-a.json")).toBe(false);
    expect(isDispatchFileName("dispatch-a.json.tmp")).toBe(false);
    expect(isDispatchFileName(".json")).toBe(false);
  });
});

describe("checkProjectDir", () => {
  let folder: string;
  beforeEach(async () => {
    folder = await mkdtemp(join(tmpdir(), "gstack-intake-"));
    await mkdir(join(folder, "trusted", "repo"), { recursive: true });
    await mkdir(join(folder, "elsewhere"), { recursive: true });
  });
  afterEach(() => rm(folder, { recursive: true, force: true }));

  it("accepts folders inside a trusted repo or matching a glob", async () => {
    expect(await checkProjectDir(join(folder, "trusted", "repo"), [join(folder, "trusted")])).toMatchObject({
      ok: true,
    });
    expect(await checkProjectDir(join(folder, "trusted", "repo"), [`${folder}/*/repo`])).toMatchObject({
      ok: true,
    });
  });

  it("refuses a symbolic link that escapes the trusted folder", async () => {
    await symlink(join(folder, "elsewhere"), join(folder, "trusted", "escape"));
    expect(await checkProjectDir(join(folder, "trusted", "escape"), [join(folder, "trusted")])).toMatchObject(
      {
        ok: false,
        refusal: { rule: "trusted-repos" },
      },
    );
  });

  it("refuses a prefix that is not a parent folder, and a missing folder", async () => {
    await mkdir(join(folder, "trusted-evil"));
    expect(await checkProjectDir(join(folder, "trusted-evil"), [join(folder, "trusted")])).toMatchObject({
      ok: false,
    });
    expect(await checkProjectDir(join(folder, "missing"), [folder])).toMatchObject({
      refusal: { rule: "project-dir" },
    });
  });
});

describe("judgeDispatch (one verdict for both doors, no daemon running)", () => {
  let folder: string;
  let rules: IntakeRules;
  beforeEach(async () => {
    folder = await mkdtemp(join(tmpdir(), "gstack-judge-"));
    await mkdir(join(folder, "trusted", "repo"), { recursive: true });
    rules = {
      source: "offer",
      now,
      firstSeen: now,
      knownAgents: ["claude"],
      maxBytes: 1024,
      trustedRepos: [join(folder, "trusted")],
      checkCallbackUrl: (url) =>
        url.startsWith("https://clawvisor.example/")
          ? { ok: true }
          : { ok: false, reason: `callback_url ${url} is not the configured Clawvisor origin` },
    };
  });
  afterEach(() => rm(folder, { recursive: true, force: true }));

  const dispatch = (extra: Record<string, unknown> = {}) => ({
    ...base,
    project_dir: join(folder, "trusted", "repo"),
    ...extra,
  });
  const bytes = (text: string) => new TextEncoder().encode(text);

  it("takes a valid dispatch, from bytes or a string, with its project folder resolved", async () => {
    const text = JSON.stringify(dispatch({ project_dir: join(folder, "trusted", ".", "repo") }));
    for (const content of [text, bytes(text)]) {
      expect(await judgeDispatch(content, rules)).toEqual({
        ok: true,
        dispatch: expect.objectContaining({ id: "dispatch-a" }),
        projectDir: join(folder, "trusted", "repo"),
      });
    }
  });

  it("counts the size in UTF-8 bytes, whichever door", async () => {
    // 400 three-byte characters: 1200 bytes, though only 400 characters.
    const text = JSON.stringify(dispatch({ task: "€".repeat(400) }));
    expect(await judgeDispatch(text, rules)).toMatchObject({ ok: false, refusal: { rule: "size" } });
    expect(await judgeDispatch(bytes(text), rules)).toMatchObject({ ok: false, refusal: { rule: "size" } });
    const fits = JSON.stringify(dispatch({ task: "€".repeat(200) }));
    expect((await judgeDispatch(fits, rules)).ok).toBe(true);
  });

  it("refuses text that is not UTF-8: invalid bytes with their offset, a lone surrogate in a string", async () => {
    const valid = bytes(JSON.stringify(dispatch()));
    const broken = new Uint8Array([...valid.subarray(0, 10), 0xff, ...valid.subarray(10)]);
    expect(await judgeDispatch(broken, rules)).toEqual({
      ok: false,
      refusal: {
        rule: "encoding",
        event: "rejected",
        reason: "is not valid UTF-8 (first invalid byte at offset 10)",
      },
    });
    // JSON.stringify escapes a lone surrogate; written raw, it has no UTF-8 form.
    const raw = JSON.stringify(dispatch()).replace('"task":"t"', '"task":"a\uD800b"');
    expect(await judgeDispatch(raw, rules)).toEqual({
      ok: false,
      refusal: {
        rule: "encoding",
        event: "rejected",
        reason: `is not valid UTF-8 (a lone surrogate at character ${raw.indexOf("a\uD800") + 1})`,
      },
    });
    // A surrogate pair is one character, not a lone surrogate.
    expect((await judgeDispatch(JSON.stringify(dispatch({ task: "a\u{1F600}b" })), rules)).ok).toBe(true);
  });

  it("refuses a callback URL with the delivery's reason, and a project outside the trusted repos", async () => {
    expect(
      await judgeDispatch(JSON.stringify(dispatch({ callback_url: "https://evil.example/x" })), rules),
    ).toEqual({
      ok: false,
      refusal: {
        rule: "callback-url",
        event: "rejected",
        id: "dispatch-a",
        reason: "callback_url https://evil.example/x is not the configured Clawvisor origin",
      },
    });
    await mkdir(join(folder, "elsewhere"));
    await symlink(join(folder, "elsewhere"), join(folder, "trusted", "link"));
    expect(
      await judgeDispatch(JSON.stringify(dispatch({ project_dir: join(folder, "trusted", "link") })), rules),
    ).toMatchObject({
      ok: false,
      refusal: { rule: "trusted-repos", id: "dispatch-a" },
    });
  });

  it("gives a string and its UTF-8 bytes the same verdict", async () => {
    const field = fc.oneof(fc.string({ unit: "grapheme", maxLength: 40 }), fc.constant(""), fc.integer());
    const content = fc.oneof(
      fc.string({ unit: "grapheme", maxLength: 200 }),
      fc
        .record({
          task: field,
          project: field,
          ttl_seconds: fc.option(fc.integer({ min: -5, max: 100_000 })),
        })
        .map((extra) => JSON.stringify(dispatch(extra))),
    );
    await fc.assert(
      fc.asyncProperty(content, async (text) => {
        expect(await judgeDispatch(bytes(text), rules)).toEqual(await judgeDispatch(text, rules));
      }),
      { numRuns: 200 },
    );
  });
});

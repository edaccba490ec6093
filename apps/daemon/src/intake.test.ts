import { mkdir, mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { signDocument } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkDispatch, checkProjectDir, isDispatchFileName } from "./intake";

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

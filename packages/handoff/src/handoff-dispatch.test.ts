import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gstackLayout, parseJson, verifyDocument } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { dispatchHandoff, dispatchIdFor, handoffToDispatch } from "./handoff-dispatch";
import { readHandoff, writeHandoff } from "./handoff-store";

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "handoff-dispatch-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const handoff = {
  from: "gstack",
  to: "wintermute",
  project: "acme-baku",
  branch: "garrytan/auth-flow",
  project_dir: "~/git/baku",
  resume_prompt: "Load gstack. Continue the refresh rotation fix.",
};

describe("handoffToDispatch", () => {
  it("makes the resume prompt the task and carries project, branch, folder and handoff id", async () => {
    const record = await writeHandoff({ ...handoff, id: "auth" }, { root });
    expect(handoffToDispatch(record)).toEqual({
      id: "dispatch-handoff-auth",
      dispatched_by: "wintermute",
      task: handoff.resume_prompt,
      project: "acme-baku",
      project_dir: "~/git/baku",
      branch: "garrytan/auth-flow",
      handoff_id: "auth",
    });
  });

  it("needs a folder to work in", async () => {
    const { project_dir: _dropped, ...withoutFolder } = handoff;
    const record = await writeHandoff(withoutFolder, { root });
    expect(() => handoffToDispatch(record)).toThrow(/does not say which folder to work in/);
    expect(handoffToDispatch(record, { projectDir: "/work/baku" }).project_dir).toBe("/work/baku");
  });

  it("derives safe dispatch ids from checkpoint references", () => {
    expect(dispatchIdFor("checkpoint:acme.baku/20260403-100000-cp")).toBe(
      "dispatch-handoff-acme-baku-20260403-100000-cp",
    );
  });
});

describe("dispatchHandoff", () => {
  it("writes a signed dispatch the daemon accepts, marks the handoff picked up, refuses a second one", async () => {
    const record = await writeHandoff({ ...handoff, id: "auth" }, { root });
    const secret = "0123456789abcdef-secret";
    const now = new Date("2026-04-03T15:00:00Z");
    const result = await dispatchHandoff(record, { root, secret, now });
    expect(result.dispatch.path).toBe(
      join(gstackLayout(root).dispatch.incoming, "dispatch-handoff-auth.json"),
    );
    const text = await readFile(result.dispatch.path, "utf8");
    expect(parseJson("dispatch", text)).toMatchObject({
      task: handoff.resume_prompt,
      created_at: now.toISOString(),
    });
    expect(verifyDocument(JSON.parse(text), secret)).toEqual({ ok: true });
    expect((await readHandoff("auth", { root })).handoff).toMatchObject({
      status: "picked_up",
      picked_up_by: "wintermute",
    });
    await expect(dispatchHandoff(record, { root })).rejects.toThrow(/already exists/);
  });
});

import { spawn } from "node:child_process";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gstackLayout, parseJson, verifyDocument } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const cli = fileURLToPath(new URL("./cli.ts", import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI from source in a real Node process (tsx compiles it on the fly). */
function run(args: string[], options: { input?: string; env?: Record<string, string> } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", cli, ...args], {
      env: { ...process.env, NO_COLOR: "1", ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? "");
  });
}

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "handoff-cli-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const writeFlags = ["--from", "gstack", "--to", "wintermute", "--project", "acme-baku"];

describe("gstack-handoff", () => {
  it("writes from flags, lists, shows and prints the resume prompt", async () => {
    const written = await run([
      "write",
      "--root",
      root,
      ...writeFlags,
      "--id",
      "auth",
      "--branch",
      "garrytan/auth-flow",
      "--context",
      "JWT auth flow",
      "--need",
      "Fix the rotation test",
      "--resume-prompt",
      "Load gstack. Fix refresh rotation.",
    ]);
    expect(written).toMatchObject({ code: 0, stderr: "" });
    expect(written.stdout).toBe(`wrote auth ${gstackLayout(root).handoff.file("auth")}\n`);

    const listed = await run(["list", "--root", root, "--pending"]);
    expect(listed.code).toBe(0);
    expect(listed.stdout.split("\t").slice(0, 4)).toEqual([
      "auth",
      "pending",
      "acme-baku",
      "garrytan/auth-flow",
    ]);

    const shown = await run(["show", "auth", "--root", root, "--json"]);
    expect(JSON.parse(shown.stdout)).toMatchObject({ ref: "auth", handoff: { context: "JWT auth flow" } });

    const resumed = await run([
      "resume",
      "--project",
      "acme-baku",
      "--branch",
      "garrytan/auth-flow",
      "--root",
      root,
    ]);
    expect(resumed).toMatchObject({ code: 0, stdout: "Load gstack. Fix refresh rotation.\n" });
  });

  it("writes from a Markdown file on stdin, keeping tricky text exactly", async () => {
    const context = "## not a heading of mine\n```\ncode\n```";
    const markdown = `---\nfrom: wintermute\nto: gstack\nproject: acme-baku\n---\n## Context\n\n\`\`\`\`verbatim\n${context}\n\`\`\`\`\n\n## Resume prompt\n\nContinue.\n`;
    const written = await run(["write", "--root", root, "--file", "-", "--id", "from-stdin", "--json"], {
      input: markdown,
    });
    expect(written.code).toBe(0);
    expect(JSON.parse(written.stdout).handoff).toMatchObject({
      from: "wintermute",
      context,
      resume_prompt: "Continue.",
    });
    const shown = await run(["show", "from-stdin", "--root", root]);
    expect(shown.stdout).toContain(context);
  });

  it("refuses a resume prompt over 4096 characters with one clear line and exit 1", async () => {
    const result = await run(["write", "--root", root, ...writeFlags, "--resume-prompt", "x".repeat(5000)]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toBe(
      "gstack-handoff: the resume prompt has 5000 characters; the limit is 4096. Shorten it (it is never cut) and put details in the Context or State sections\n",
    );
  });

  it("names the field and rule of invalid input, and a missing handoff", async () => {
    const invalid = await run(["write", "--root", root, "--from", "gstack", "--project", "acme-baku"]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/^gstack-handoff: .*to: is required but missing \[invalid_type\]\n$/);
    const missing = await run(["show", "nope", "--root", root]);
    expect(missing).toMatchObject({ code: 1, stdout: "" });
    expect(missing.stderr).toMatch(/^gstack-handoff: no handoff "nope"/);
    const noPending = await run(["resume", "--project", "acme-baku", "--root", root]);
    expect(noPending.stderr).toBe("gstack-handoff: no pending handoff for project acme-baku\n");
    expect(noPending.code).toBe(1);
  });

  it("resumes a gstack checkpoint as a signed dispatch and marks it picked up", async () => {
    const layout = gstackLayout(root);
    await mkdir(layout.project("acme-baku").checkpoints, { recursive: true });
    await writeFile(
      join(layout.project("acme-baku").checkpoints, "20260403-143000-auth.md"),
      "---\nstatus: in-progress\nbranch: auth\ntimestamp: 2026-04-03T14:30:00Z\n---\n## Working on: auth\n### Remaining Work\nFix expiry.\n",
    );
    const secretFile = join(root, "secret");
    await writeFile(secretFile, "0123456789abcdef0123\n");
    await chmod(secretFile, 0o600);

    const dispatched = await run([
      "resume",
      "--project",
      "acme-baku",
      "--dispatch",
      "--project-dir",
      "/work/baku",
      "--dispatched-by",
      "wintermute",
      "--secret-file",
      secretFile,
      "--root",
      root,
      "--json",
    ]);
    expect(dispatched.stderr).toBe("");
    const output = JSON.parse(dispatched.stdout) as { dispatch: { id: string; path: string } };
    expect(output.dispatch.id).toBe("dispatch-handoff-acme-baku-20260403-143000-auth");
    const text = await readFile(output.dispatch.path, "utf8");
    const dispatch = parseJson("dispatch", text);
    expect(dispatch).toMatchObject({
      project: "acme-baku",
      project_dir: "/work/baku",
      branch: "auth",
      dispatched_by: "wintermute",
      handoff_id: "checkpoint:acme-baku/20260403-143000-auth",
    });
    expect(dispatch.task).toContain("Remaining work:\nFix expiry.");
    expect(verifyDocument(JSON.parse(text), "0123456789abcdef0123")).toEqual({ ok: true });

    const pending = await run(["list", "--root", root, "--pending", "--json"]);
    expect(JSON.parse(pending.stdout).records).toEqual([]);
  });

  it("refuses a secret file others can read", async () => {
    await run([
      "write",
      "--root",
      root,
      ...writeFlags,
      "--id",
      "x",
      "--project-dir",
      "/w",
      "--resume-prompt",
      "go",
    ]);
    const secretFile = join(root, "secret");
    await writeFile(secretFile, "0123456789abcdef0123\n");
    await chmod(secretFile, 0o644);
    const result = await run(["resume", "x", "--dispatch", "--secret-file", secretFile, "--root", root]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/has mode 644; run 'chmod 600/);
  });

  it("picks a handoff up once", async () => {
    await run(["write", "--root", root, ...writeFlags, "--id", "p"]);
    const first = await run(["pick", "p", "--root", root]);
    expect(first).toMatchObject({ code: 0, stdout: "picked up p by wintermute\n" });
    const second = await run(["pick", "p", "--by", "other", "--root", root]);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/^gstack-handoff: p was already picked up by wintermute at /);
  });

  it("finds the state root through GSTACK_HOME", async () => {
    await run(["write", ...writeFlags, "--id", "env"], { env: { GSTACK_HOME: root } });
    const shown = await run(["show", "env", "--json"], { env: { GSTACK_HOME: root } });
    expect(JSON.parse(shown.stdout).path).toBe(gstackLayout(root).handoff.file("env"));
  });
});

import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gstackLayout } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadRoutingTable } from "./load-routing-table";
import { routeTask } from "./route-task";

let root: string;
let project: string;
beforeEach(async () => {
  const base = await mkdtemp(join(tmpdir(), "routing-load-"));
  root = join(base, "state");
  project = join(base, "project");
  await mkdir(root);
  await mkdir(project);
});
afterEach(async () => {
  await rm(join(root, ".."), { recursive: true, force: true });
});

const claudeMd = "# Baku\n\n## Skill routing\n- Bugs, errors → invoke investigate\n";

describe("loadRoutingTable", () => {
  it("prefers routing.yaml over CLAUDE.md and says so", async () => {
    await writeFile(
      gstackLayout(root).routing,
      "routes:\n  - match: { task_type: bugs }\n    skills: [debug]\n",
    );
    await writeFile(join(project, "CLAUDE.md"), claudeMd);
    const result = await routeTask({ task_type: "bugs" }, { root, projectDir: project });
    expect(result.source).toEqual({ kind: "routing.yaml", path: gstackLayout(root).routing });
    expect(result.skills).toEqual(["debug"]);
  });

  it("falls back to the Skill routing section of CLAUDE.md", async () => {
    await writeFile(join(project, "CLAUDE.md"), claudeMd);
    const result = await routeTask({ task_type: "errors" }, { root, projectDir: project });
    expect(result.source).toEqual({ kind: "CLAUDE.md", path: join(project, "CLAUDE.md") });
    expect(result.skills).toEqual(["investigate"]);
  });

  it("uses AGENTS.md when CLAUDE.md has no Skill routing section", async () => {
    await writeFile(join(project, "CLAUDE.md"), "# Notes only\n");
    await writeFile(join(project, "AGENTS.md"), "## Skill routing\n- Ship → invoke ship\n");
    const table = await loadRoutingTable({ root, projectDir: project });
    expect(table.source).toEqual({ kind: "AGENTS.md", path: join(project, "AGENTS.md") });
    expect(table.routes).toHaveLength(1);
  });

  it("returns an empty table with source none when nothing exists", async () => {
    expect(await loadRoutingTable({ root, projectDir: project })).toEqual({
      source: { kind: "none" },
      routes: [],
      warnings: [],
    });
    expect((await loadRoutingTable({ root })).source.kind).toBe("none");
  });

  it("finds the state root through GSTACK_HOME", async () => {
    await writeFile(gstackLayout(root).routing, "routes:\n  - match: {}\n    load: [always]\n");
    const result = await routeTask({}, { env: { GSTACK_HOME: root } });
    expect(result.load).toEqual(["always"]);
  });

  it("refuses a broken routing.yaml instead of falling back", async () => {
    await writeFile(gstackLayout(root).routing, "routes: [\n");
    await writeFile(join(project, "CLAUDE.md"), claudeMd);
    await expect(loadRoutingTable({ root, projectDir: project })).rejects.toThrow(
      /routing\.yaml: invalid routing\n.*line \d+, column \d+/,
    );
  });
});

describe("relativeToProject", () => {
  it("matches absolute touched paths inside the project folder", async () => {
    await writeFile(
      gstackLayout(root).routing,
      "routes:\n  - match: { files: ['src/**'] }\n    skills: [review]\n",
    );
    const inside = await routeTask({ files: [join(project, "src", "a.ts")] }, { root, projectDir: project });
    expect(inside.skills).toEqual(["review"]);
    const outside = await routeTask({ files: ["/elsewhere/src/a.ts"] }, { root, projectDir: project });
    expect(outside.skills).toEqual([]);
  });
});

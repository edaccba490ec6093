import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import {
  callbackErrorCodeSchema,
  documentKinds,
  failureKindSchema,
  gstackLayout,
  openClawLayout,
  parseJsonLines,
  parseValue,
  parseYaml,
  writeDispatchFile,
} from "@gstack/contracts";
import { bulletItems, extractLearnings, parseReportSections, REPORT_SECTIONS } from "@gstack/daemon";
import { validateOpenClawSkill } from "@gstack/generator";
import { importProject } from "@gstack/learnings";
import JSON5 from "json5";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYamlText } from "yaml";
import { BRIDGE_SKILL_NAME, bridgeSkillPath } from "./bridge-skill-path";
import {
  commandUse,
  fencedBlocks,
  helpFlags,
  helpSubcommands,
  namedPaths,
  readSkillFiles,
  type ShownCommand,
  type SkillFile,
  shownCommands,
  unknownPaths,
} from "./skill-text.test-support";

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const packageRoot = resolve(bridgeSkillPath, "..", "..");
const packageJson = JSON.parse(await readFile(join(packageRoot, "package.json"), "utf8")) as {
  version: string;
};

let files: SkillFile[] = [];
let skillMd = "";
let commands: ShownCommand[] = [];

beforeAll(async () => {
  files = await readSkillFiles(bridgeSkillPath);
  skillMd = files.find((file) => file.file === "SKILL.md")?.content ?? "";
  commands = files.flatMap(shownCommands);
});

function frontmatterOf(markdown: string): Record<string, unknown> {
  const match = /^---\n([\s\S]*?)\n---\n/.exec(markdown);
  if (!match) throw new Error("no frontmatter");
  return parseYamlText(match[1]!, { schema: "core" }) as Record<string, unknown>;
}

function metadataOf(markdown: string): {
  openclaw: { requires: { bins: string[] }; install: { kind: string; package: string; bins: string[] }[] };
  gstack: Record<string, unknown>;
} {
  const metadata = frontmatterOf(markdown)["metadata"];
  return JSON5.parse(typeof metadata === "string" ? metadata : JSON.stringify(metadata));
}

describe("SKILL.md against OpenClaw's loader and strict validator", () => {
  it("has no issue at all, warnings included", () => {
    expect(validateOpenClawSkill({ folderName: basename(bridgeSkillPath), content: skillMd })).toEqual([]);
  });

  it("is named after its folder and describes itself in one line under 160 characters", () => {
    const frontmatter = frontmatterOf(skillMd);
    expect(frontmatter["name"]).toBe(BRIDGE_SKILL_NAME);
    const description = String(frontmatter["description"]);
    expect(description.length).toBeLessThan(160);
    expect(description).not.toMatch(/[<>\n]/);
  });

  it("keeps gstack's own fields under metadata.gstack, with the package version", () => {
    const { gstack } = metadataOf(skillMd);
    expect(gstack["version"]).toBe(packageJson.version);
    expect(String(gstack["min_gstack_version"])).toMatch(/^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$/);
    expect(Object.keys(frontmatterOf(skillMd)).sort()).toEqual(["description", "metadata", "name"]);
  });

  it("requires git and every program whose commands it shows, all from one npm install entry", () => {
    const { openclaw } = metadataOf(skillMd);
    const shownPrograms = new Set(commands.map((command) => commandUse(command.text).program));
    expect(openclaw.requires.bins).toContain("git");
    expect(new Set(openclaw.requires.bins.filter((bin) => bin !== "git"))).toEqual(shownPrograms);
    const installed = new Set(openclaw.install.flatMap((entry) => entry.bins));
    expect(installed).toEqual(shownPrograms);
    for (const entry of openclaw.install) expect(entry.package).toMatch(/^@gstack\/[a-z-]+$/);
    // OpenClaw offers only one preferred install entry, so one package must provide every command.
    expect(openclaw.install).toHaveLength(1);
    expect(openclaw.install[0]?.package).toBe("@gstack/openclaw-plugin");
  });

  it("points only at reference files that exist", () => {
    const referenced = new Set(
      [...skillMd.matchAll(/`(references\/[a-z-]+\.md)`/g)].map((match) => match[1]!),
    );
    expect(referenced.size).toBeGreaterThan(0);
    for (const reference of referenced) expect(files.map((file) => file.file)).toContain(reference);
    for (const file of files) if (file.file !== "SKILL.md") expect(referenced).toContain(file.file);
  });
});

/** The built CLI of a workspace package, from its `bin` entry. */
function cliOf(packageName: string, program: string): string {
  const manifestPath = require.resolve(`${packageName}/package.json`);
  const manifest = JSON.parse(require("node:fs").readFileSync(manifestPath, "utf8")) as {
    bin: Record<string, string>;
  };
  return join(dirname(manifestPath), manifest.bin[program]!);
}

const helpCache = new Map<string, Promise<string>>();
function helpOf(cli: string, ...words: string[]): Promise<string> {
  const key = [cli, ...words].join(" ");
  if (!helpCache.has(key)) {
    helpCache.set(
      key,
      run(process.execPath, [cli, ...words, "--help"], { env: { ...process.env, NO_COLOR: "1" } }).then(
        ({ stdout, stderr }) => stdout + stderr,
      ),
    );
  }
  return helpCache.get(key)!;
}

/** Checks every shown command of one program against the CLI's own --help. */
async function checkAgainstHelp(program: string, cli: string): Promise<string[]> {
  if (!existsSync(cli)) throw new Error(`${cli} does not exist: build it first (pnpm turbo build)`);
  const problems: string[] = [];
  const subcommands = helpSubcommands(await helpOf(cli));
  expect(subcommands.length).toBeGreaterThan(0);
  for (const shown of commands) {
    const use = commandUse(shown.text);
    if (use.program !== program) continue;
    const where = `${shown.file}:${shown.line} \`${shown.text}\``;
    if (!use.subcommand || !subcommands.includes(use.subcommand)) {
      problems.push(`${where}: ${program} has no subcommand ${JSON.stringify(use.subcommand)}`);
      continue;
    }
    const flags = helpFlags(await helpOf(cli, use.subcommand));
    for (const flag of use.flags) {
      if (flag !== "--help" && !flags.includes(flag))
        problems.push(`${where}: ${program} ${use.subcommand} has no option ${flag}`);
    }
  }
  return problems;
}

const workspaceClis = [
  { program: "gstack-handoff", packageName: "@gstack/handoff" },
  { program: "gstack-activity", packageName: "@gstack/activity" },
  { program: "gstack-learnings", packageName: "@gstack/learnings" },
  { program: "gstack-routing", packageName: "@gstack/routing" },
  { program: "gstack-dispatch", packageName: "@gstack/daemon" },
];

describe("every command line the skill shows exists in the real CLI's --help", () => {
  it("shows only the gstack programs this repository ships", () => {
    expect(commands.length).toBeGreaterThan(30);
    const programs = new Set(commands.map((command) => commandUse(command.text).program));
    expect([...programs].sort()).toEqual([
      "gstack-activity",
      "gstack-dispatch",
      "gstack-handoff",
      "gstack-learnings",
      "gstack-routing",
    ]);
  });

  it.each(workspaceClis)("$program: subcommands and options", async ({ program, packageName }) => {
    expect(commands.some((command) => commandUse(command.text).program === program)).toBe(true);
    expect(await checkAgainstHelp(program, cliOf(packageName, program))).toEqual([]);
  });

  it("teaches the commands the protocol rests on", () => {
    const shown = new Set(
      commands.map((command) => {
        const use = commandUse(command.text);
        return `${use.program} ${use.subcommand}${use.flags.includes("--dispatch") ? " --dispatch" : ""}`;
      }),
    );
    for (const required of [
      "gstack-dispatch submit",
      "gstack-dispatch status",
      "gstack-dispatch cancel",
      "gstack-dispatch install",
      "gstack-handoff list",
      "gstack-handoff show",
      "gstack-handoff resume --dispatch",
      "gstack-handoff write",
      "gstack-activity ship",
      "gstack-activity import-timeline",
      "gstack-learnings sync",
      "gstack-learnings search",
      "gstack-routing resolve",
    ]) {
      expect(shown, required).toContain(required);
    }
  });
});

describe("gstack-dispatch, the daemon's CLI", () => {
  it("takes the example dispatch with submit, as the skill says", async () => {
    const root = await mkdtemp(join(tmpdir(), "bridge-skill-submit-"));
    try {
      const example = files
        .flatMap((file) => fencedBlocks(file.content))
        .find((block) => block.info[1] === "dispatch")!;
      const input = join(root, "example.json");
      await writeFile(input, example.body);
      const { stdout } = await run(process.execPath, [
        cliOf("@gstack/daemon", "gstack-dispatch"),
        "submit",
        input,
        "--root",
        root,
      ]);
      const id = (JSON.parse(example.body) as { id: string }).id;
      expect(stdout).toContain(`submitted ${id}`);
      const path = join(gstackLayout(root).dispatch.incoming, `${id}.json`);
      parseValue("dispatch", JSON.parse(await readFile(path, "utf8")));
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe("what the skill says about failures covers every code contracts defines", () => {
  it("says what to do for every callback error code, in SKILL.md and in the reference", () => {
    const reference = files.find((file) => file.file === "references/dispatch.md")!.content;
    for (const code of callbackErrorCodeSchema.options) {
      expect(skillMd, code).toMatch(new RegExp(`^- \`${code}\`: .+`, "m"));
      expect(reference, code).toMatch(new RegExp(`^- \`${code}\`: .+`, "m"));
    }
  });

  it("says what to do for every failure kind of a completion report", () => {
    const reference = files.find((file) => file.file === "references/reports.md")!.content;
    for (const kind of failureKindSchema.options)
      expect(reference, kind).toMatch(new RegExp(`^- \`${kind}\`: .+`, "m"));
  });
});

describe("every path the skill names is part of the contracts layout", () => {
  it("names many paths, all known", () => {
    const paths = files.flatMap((file) => namedPaths(file.content));
    expect(paths.length).toBeGreaterThan(20);
    expect(unknownPaths(paths)).toEqual([]);
  });

  it("names the files the protocol needs", () => {
    const named = new Set(files.flatMap((file) => namedPaths(file.content)));
    const gstack = gstackLayout("~/.gstack");
    for (const path of [
      `${gstack.dispatch.tmp}/`,
      gstack.dispatch.heartbeat,
      gstack.dispatch.audit,
      gstack.dispatchSecret,
      gstack.config,
      gstack.routing,
      gstack.standingTasks,
    ]) {
      expect(named, path).toContain(path);
    }
  });
});

describe("the examples are valid documents", () => {
  const labelled = () =>
    files.flatMap((file) =>
      fencedBlocks(file.content)
        .filter((block) => block.info.length > 1)
        .map((block) => ({ ...block, file: file.file, kind: block.info[1]! })),
    );

  it("labels each example with a document kind contracts knows, or a skill-specific kind", () => {
    const kinds = new Set(labelled().map((block) => block.kind));
    for (const kind of kinds)
      expect([...documentKinds, "completion-report", "learning-section"]).toContain(kind);
    for (const kind of [
      "dispatch",
      "list-sessions",
      "heartbeat",
      "callback-error",
      "daemon-config",
      "standing-task",
      "completion-report",
      "learning-section",
    ]) {
      expect(kinds, kind).toContain(kind);
    }
  });

  it("every JSON and YAML example passes its contracts schema", () => {
    for (const block of labelled()) {
      if (!(documentKinds as string[]).includes(block.kind)) continue;
      const source = `${block.file}:${block.line}`;
      const kind = block.kind as (typeof documentKinds)[number];
      if (block.info[0] === "json") parseValue(kind, JSON.parse(block.body), { source });
      else if (block.info[0] === "yaml") parseYaml(kind, block.body, { source });
      else throw new Error(`${source}: example language ${block.info[0]} is neither json nor yaml`);
    }
  });

  it("the example dispatch is complete, and leaves out what submit adds", () => {
    const block = labelled().find((candidate) => candidate.kind === "dispatch")!;
    const dispatch = parseValue("dispatch", JSON.parse(block.body));
    expect(dispatch.id).toMatch(/^dispatch-/);
    const written = JSON.parse(block.body) as Record<string, unknown>;
    expect(written).not.toHaveProperty("source_signature");
    expect(written).not.toHaveProperty("target_agent");
  });

  it("the example dispatch is handed over the way the skill says: written in dispatch/tmp, renamed into dispatch/", async () => {
    const root = await mkdtemp(join(tmpdir(), "bridge-skill-dispatch-"));
    try {
      const block = labelled().find((candidate) => candidate.kind === "dispatch")!;
      const layout = gstackLayout(root);
      const written = await writeDispatchFile(layout, JSON.parse(block.body));
      expect(written.path).toBe(join(layout.dispatch.incoming, `${written.id}.json`));
      expect(await readdir(layout.dispatch.tmp)).toEqual([]);
      parseValue("dispatch", JSON.parse(await readFile(written.path, "utf8")));
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it("the completion report example has completion frontmatter and the daemon's four sections, as SKILL.md lists them", () => {
    const block = labelled().find((candidate) => candidate.kind === "completion-report")!;
    const match = /^---\n([\s\S]*?)\n---\n([\s\S]*)$/.exec(block.body);
    expect(match).not.toBeNull();
    const completion = parseYaml("completion", match![1]!, { source: "completion-report example" });
    expect(completion.status).toBe("completed");
    const sections = [...match![2]!.matchAll(/^## (.+)$/gm)].map((heading) => heading[1]);
    const listed = /Sections: (.+)\.$/m.exec(skillMd)?.[1];
    expect(listed).toBeDefined();
    expect(sections).toEqual([...listed!.matchAll(/`## ([^`]+)`/g)].map((item) => item[1]));
    expect(sections).toEqual([...REPORT_SECTIONS]);
    const parsed = parseReportSections(match![2]!);
    for (const section of REPORT_SECTIONS) expect(parsed?.[section]?.trim(), section).not.toBe("");
    const learnings = extractLearnings(bulletItems(parsed!["Learnings logged"]), {
      dispatchId: completion.dispatch_id,
      ts: "2026-11-22T09:23:20Z",
    });
    expect(learnings.map((learning) => learning.type)).toEqual(["pitfall"]);
  });
});

describe("the example learning section is imported by @gstack/learnings", () => {
  let root = "";
  afterAll(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("becomes one line of gstack's learnings.jsonl with the written type, key and insight", async () => {
    root = await mkdtemp(join(tmpdir(), "bridge-skill-learning-"));
    const gstackRoot = join(root, "gstack");
    const workspace = join(root, "workspace");
    const block = files
      .flatMap((file) => fencedBlocks(file.content))
      .find((candidate) => candidate.info[1] === "learning-section")!;
    const project = /^- project: (\S+)$/m.exec(block.body)?.[1];
    expect(project).toBeDefined();
    await mkdir(openClawLayout(workspace).memoryDir, { recursive: true });
    await writeFile(join(openClawLayout(workspace).memoryDir, "2026-11-22.md"), `# Notes\n\n${block.body}\n`);

    const report = await importProject({ root: gstackRoot, workspace, project: project! });
    expect(report.problems).toEqual([]);
    expect(report.blocked).toEqual([]);
    expect(report.imported).toBe(1);

    const text = await readFile(gstackLayout(gstackRoot).project(project!).learnings, "utf8");
    const { entries, problems } = parseJsonLines("learning", text, { source: "learnings.jsonl" });
    expect(problems).toEqual([]);
    expect(entries).toHaveLength(1);
    const entry = entries[0]!.value;
    const heading = /^## Learning: ([a-z]+)\/([A-Za-z0-9_-]+)$/m.exec(block.body)!;
    expect(entry).toMatchObject({
      type: heading[1],
      key: heading[2],
      insight: block.body
        .split("\n")
        .find((line) => line.trim() !== "" && !line.startsWith("#") && !line.startsWith("-")),
      confidence: Number(/^- confidence: ([0-9]+)$/m.exec(block.body)?.[1]),
    });
  });
});

import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import {
  callbackErrorCodeSchema,
  cancelAnswerSchema,
  cancelRequestSchema,
  completionStatusSchema,
  dispatchSnapshotSchema,
  documentKinds,
  failureKindSchema,
  gstackLayout,
  openClawLayout,
  parseJsonLines,
  parseValue,
  parseYaml,
  SERVICE_API_ROUTES,
  type ServiceAction,
  serviceActionSchema,
  snapshotStatusSchema,
  spawnRequestSchema,
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
  codeBullets,
  codeSpans,
  commandUse,
  fencedBlocks,
  helpFlags,
  helpSubcommands,
  markdownSection,
  namedPaths,
  readSkillFiles,
  type ShownCommand,
  type SkillFile,
  shownCommands,
  tableRows,
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

  it("keeps SKILL.md under 14 KB: details belong in the references", () => {
    expect(Buffer.byteLength(skillMd, "utf8")).toBeLessThan(14 * 1024);
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
  const codes: readonly string[] = callbackErrorCodeSchema.options;

  it("SKILL.md says what to do for every callback error code, each in exactly one line, and no other code", () => {
    const bullets = codeBullets(markdownSection(skillMd, "When delivery fails"));
    const named = bullets.flatMap((bullet) => bullet.codes);
    expect(named.filter((code) => !codes.includes(code))).toEqual([]);
    for (const code of codes)
      expect(
        named.filter((item) => item === code),
        code,
      ).toHaveLength(1);
    for (const bullet of bullets) expect(bullet.text.length, bullet.codes.join()).toBeGreaterThan(20);
  });

  it("the reference gives every callback error code a line of its own, and no other code", () => {
    const reference = files.find((file) => file.file === "references/dispatch.md")!.content;
    const bullets = codeBullets(markdownSection(reference, "Delivery errors"));
    for (const bullet of bullets) expect(bullet.codes.length, bullet.text).toBeLessThanOrEqual(2);
    const named = bullets.flatMap((bullet) => bullet.codes);
    expect(named.filter((code) => !codes.includes(code))).toEqual([]);
    for (const code of codes)
      expect(
        named.filter((item) => item === code),
        code,
      ).toHaveLength(1);
  });

  it("says what to do for every failure kind of a completion report", () => {
    const reference = files.find((file) => file.file === "references/reports.md")!.content;
    for (const kind of failureKindSchema.options)
      expect(reference, kind).toMatch(new RegExp(`^- \`${kind}\`: .+`, "m"));
  });
});

/** The request body schema of each action sent with POST; GET actions take query parameters. */
const REQUEST_SCHEMAS: Partial<
  Record<ServiceAction, { shape: Record<string, { safeParse(value: unknown): { success: boolean } }> }>
> = {
  "spawn-session": spawnRequestSchema,
  "cancel-session": cancelRequestSchema,
};

/** A documented route: `METHOD /path` with optional `?name=…&other=…` query parameters. */
function routeOf(cell: string): { method: string; path: string; query: string[] } {
  const match = /^`([A-Z]+) (\/[^?`\s]*)(?:\?([^`]*))?`$/.exec(cell.trim());
  if (!match) throw new Error(`not a route: ${cell}`);
  const query = match[3] ? [...match[3].matchAll(/([a-z_]+)=/g)].map((item) => item[1]!) : [];
  return { method: match[1]!, path: match[2]!, query };
}

/** The nested schema at a dotted field path of the snapshot document, or undefined. */
function snapshotField(path: string): unknown {
  let schema: unknown = dispatchSnapshotSchema;
  for (const name of path.split(".")) {
    while (schema && typeof (schema as { unwrap?: unknown }).unwrap === "function")
      schema = (schema as { unwrap(): unknown }).unwrap();
    const shape = (schema as { shape?: Record<string, unknown> } | undefined)?.shape;
    if (!shape || !(name in shape)) return undefined;
    schema = shape[name];
  }
  return schema;
}

describe("the service actions the skill teaches are the ones contracts define", () => {
  const reference = () => files.find((file) => file.file === "references/dispatch.md")!.content;
  const table = () => tableRows(markdownSection(reference(), "Service actions"));
  const actions: readonly string[] = serviceActionSchema.options;
  const routes = Object.entries(SERVICE_API_ROUTES);

  it("the reference's table lists every action once, with its params, method, path and answer", () => {
    const rows = table();
    expect(rows.map((row) => codeSpans(row[0]!)[0]).sort()).toEqual([...actions].sort());
    for (const [cell, paramsCell, routeCell, answerCell] of rows) {
      const action = codeSpans(cell!)[0] as ServiceAction;
      const route = routeOf(routeCell!);
      expect({ method: route.method, path: route.path }, action).toEqual(SERVICE_API_ROUTES[action]);
      const params = codeSpans(paramsCell!);
      const schema = REQUEST_SCHEMAS[action];
      if (route.method === "POST") {
        expect(schema, `${action} is sent with POST, so it has a request schema`).toBeDefined();
        expect(params.sort(), action).toEqual(Object.keys(schema!.shape).sort());
        for (const param of params) {
          // A param the text calls optional is one the schema lets the caller leave out.
          const optional = schema!.shape[param]!.safeParse(undefined).success;
          expect(new RegExp(`\`${param}\` \\(optional\\)`).test(paramsCell!), `${action} ${param}`).toBe(
            optional,
          );
        }
      } else {
        expect(schema, action).toBeUndefined();
        expect(params, action).toEqual(route.query);
        if (params.length === 0) expect(paramsCell, action).toBe("none");
      }
      const answer = codeSpans(answerCell!).filter((name) => (documentKinds as string[]).includes(name));
      expect(answer, `${action} names the document kind it answers`).toHaveLength(1);
      const examples = fencedBlocks(reference()).map((block) => block.info[1]);
      expect(examples, `${action}: an example of ${answer[0]}`).toContain(answer[0]);
    }
  });

  it("SKILL.md gives every action one line with its params, method and path", () => {
    const section = markdownSection(skillMd, "Service actions (`gstack-coding`)");
    for (const action of actions) {
      const lines = section.split("\n").filter((line) => line.startsWith(`- \`${action}\``));
      expect(lines, action).toHaveLength(1);
      const { method, path } = SERVICE_API_ROUTES[action as ServiceAction];
      expect(lines[0], action).toMatch(new RegExp(`\`${method} ${path}[?\`]`));
      const row = table().find((candidate) => codeSpans(candidate[0]!)[0] === action)!;
      for (const param of codeSpans(row[1]!))
        expect(lines[0], `${action} ${param}`).toContain(`\`${param}\``);
    }
  });

  it("names every route, health included, with its method in SKILL.md and in the reference", () => {
    for (const [action, { method, path }] of routes) {
      const pattern = new RegExp(`\`${method} ${path}[?\`]`);
      expect(skillMd, action).toMatch(pattern);
      expect(reference(), action).toMatch(pattern);
    }
  });

  it("names the socket and token files the layout defines", () => {
    const named = new Set(namedPaths(reference()));
    const gstack = gstackLayout("~/.gstack");
    expect(named).toContain(gstack.dispatch.apiSocket);
    expect(named).toContain(gstack.apiToken);
  });

  it("splits every snapshot status into still going and ended exactly as contracts do", () => {
    const ended: readonly string[] = completionStatusSchema.options;
    const statuses: readonly string[] = snapshotStatusSchema.options;
    const going = statuses.filter((status) => !ended.includes(status));
    expect(going.length).toBeGreaterThan(0);
    for (const text of [
      markdownSection(skillMd, "Service actions (`gstack-coding`)"),
      markdownSection(reference(), "Service actions"),
    ]) {
      const bulletWith = (marker: string) => {
        const lines = text.split("\n").filter((line) => line.startsWith("- ") && line.includes(marker));
        expect(lines, marker).toHaveLength(1);
        return codeSpans(lines[0]!).filter((name) => statuses.includes(name));
      };
      expect(bulletWith("`terminal: false`").sort()).toEqual([...going].sort());
      expect(bulletWith("`terminal: true`").sort()).toEqual([...ended].sort());
    }
  });

  it("names only snapshot fields that exist, and says what a cancel answers with every outcome", () => {
    const outcomes: readonly string[] = cancelAnswerSchema.shape.outcome.options;
    for (const text of [
      markdownSection(skillMd, "Service actions (`gstack-coding`)"),
      markdownSection(reference(), "Service actions"),
    ]) {
      const snapshotLines = text
        .split("\n")
        .filter((line) => line.startsWith("- ") && /`(terminal|run\.|earlier_runs)/.test(line));
      expect(snapshotLines.length).toBeGreaterThanOrEqual(3);
      for (const line of snapshotLines) {
        // A bare name may be a field of a field named before it on the line (`run` … `artifacts`).
        const seen: string[] = [];
        for (const span of codeSpans(line)) {
          const field = /^([a-z_]+(?:\.[a-z_]+)?)(?:: .+)?$/.exec(span)?.[1];
          if (!field || snapshotStatusSchema.safeParse(field).success) continue;
          const resolved = [field, ...seen.map((parent) => `${parent}.${field}`)].find(
            (candidate) => snapshotField(candidate) !== undefined,
          );
          expect(resolved, `${span} in "${line}"`).toBeDefined();
          seen.push(resolved!);
        }
      }
      const cancelLines = text
        .split("\n")
        .filter((line) => outcomes.every((outcome) => line.includes(`\`${outcome}\``)));
      expect(cancelLines, "a line with every cancel outcome").toHaveLength(1);
    }
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

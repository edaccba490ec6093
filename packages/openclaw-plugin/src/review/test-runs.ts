import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { parseReportSections } from "@gstack/daemon-client";

/** What is known of a test run: passed, failed, or unknown (never guessed). */
export type TestOutcome = "passed" | "failed" | "unknown";

/** One test run the agent made (from its stream) or its report names. */
export interface TestRun {
  command: string;
  outcome: TestOutcome;
  /** The exit code, when the tool result says it. */
  exitCode?: number;
  /** Why the outcome is unknown, or what else is known. */
  note?: string;
  /** Where it was read: the agent's own tool calls, or what its report says. */
  source: "agent" | "report";
}

/** A test runner at the start of one simple command (after variables, `npx`, `timeout`, …). */
const TEST_COMMAND = new RegExp(
  [
    String.raw`(?:npm|pnpm|yarn|bun)\s+(?:(?:-\S+|--filter\s+\S+)\s+)*(?:run\s+)?test(?::[\w:-]+)?(?:\s|$)`,
    String.raw`npm\s+t(?:\s|$)`,
    String.raw`(?:(?:npx|bunx|pnpm\s+exec|pnpm\s+dlx|yarn)\s+(?:-\S+\s+)*)?(?:vitest|jest|mocha|ava|playwright\s+test)\b`,
    String.raw`(?:python3?\s+-m\s+)?pytest\b`,
    String.raw`python3?\s+-m\s+unittest\b`,
    String.raw`(?:uv\s+run\s+|poetry\s+run\s+)pytest\b`,
    String.raw`go\s+test\b`,
    String.raw`cargo\s+(?:test|nextest)\b`,
    String.raw`bun\s+test\b`,
    String.raw`deno\s+test\b`,
    String.raw`make\s+(?:-\S+\s+)*(?:test|check)\b`,
    String.raw`tox\b`,
    String.raw`(?:bundle\s+exec\s+)?rspec\b`,
    String.raw`mvn\s+(?:-\S+\s+)*test\b`,
    String.raw`(?:\.\/)?gradlew?\s+test\b`,
    String.raw`dotnet\s+test\b`,
    String.raw`ctest\b`,
    String.raw`(?:vendor\/bin\/)?phpunit\b`,
  ]
    .map((alternative) => `(?:${alternative})`)
    .join("|"),
);

/** What may come before the runner in a simple command: variables, `env`, `timeout 60`. */
const PREFIX = /^(?:(?:[A-Za-z_]\w*=(?:"[^"]*"|'[^']*'|\S*)|env|timeout\s+\S+|nice|time|command)\s+)*/;

/** A simple command's parts and the operators between them (`&&`, `||`, `;`, `|`). */
function splitCommand(command: string): { parts: string[]; joins: string[] } {
  const parts: string[] = [];
  const joins: string[] = [];
  let current = "";
  let quote: string | undefined;
  for (let at = 0; at < command.length; at++) {
    const char = command[at] as string;
    if (quote) {
      if (char === "\\" && quote === '"') {
        current += char + (command[at + 1] ?? "");
        at++;
        continue;
      }
      if (char === quote) quote = undefined;
      current += char;
      continue;
    }
    if (char === '"' || char === "'") {
      quote = char;
      current += char;
      continue;
    }
    const two = command.slice(at, at + 2);
    const join =
      two === "&&" || two === "||" ? two : char === ";" || char === "|" || char === "\n" ? char : "";
    if (join) {
      parts.push(current.trim());
      joins.push(join === "\n" ? ";" : join);
      current = "";
      at += join.length - 1;
      continue;
    }
    current += char;
  }
  parts.push(current.trim());
  return { parts, joins };
}

/**
 * Where a shell command runs tests: the index of its test part, and whether the command's exit
 * status is the tests' own (the test part is last and everything before it joined by `&&`, so a
 * failure before it is also a failure of the run). Undefined when it runs no tests.
 */
export function findTestCommand(command: string): { part: string; statusIsTests: boolean } | undefined {
  const { parts, joins } = splitCommand(command);
  for (let index = 0; index < parts.length; index++) {
    const part = (parts[index] as string).replace(/^\(+/, "");
    const rest = part.replace(PREFIX, "");
    const match = TEST_COMMAND.exec(rest);
    if (match?.index !== 0) continue;
    const last = index === parts.length - 1;
    const chained = joins.slice(0, index).every((join) => join === "&&");
    return { part: parts[index] as string, statusIsTests: last && chained };
  }
  return undefined;
}

function resultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content))
    return content
      .map((part) =>
        typeof part === "object" && part !== null && typeof (part as { text?: unknown }).text === "string"
          ? (part as { text: string }).text
          : "",
      )
      .join("\n");
  return "";
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null;

/**
 * Whether a tool result is a refusal before the command ran: Claude Code's own record of the
 * permission decision first (`tool_result_meta`), its words when that is absent.
 */
function refused(event: Json, id: string, said: string, code: string | undefined): boolean {
  const meta = Array.isArray(event.tool_result_meta)
    ? event.tool_result_meta.find((entry) => isObject(entry) && entry.id === id)
    : undefined;
  if (isObject(meta)) {
    const decision = isObject(meta.permission_decision) ? meta.permission_decision.decision : undefined;
    if (decision === "reject" || typeof meta.non_execution_kind === "string") return true;
    if (decision === "accept") return false;
  }
  return code === undefined && /requires approval|permission to use|was blocked|not allowed/i.test(said);
}

/**
 * The test runs in a Claude Code stream-json log: each Bash tool use whose command runs tests,
 * with the outcome its tool result says. A failed command is one whose result has `is_error`
 * true (Claude Code marks a non-zero exit so); one refused before it ran, or with no result (the
 * agent was stopped), or whose exit status is not the tests' own (`pnpm test | tail`), is unknown.
 */
export function testRunsInStream(text: string): TestRun[] {
  const uses = new Map<string, TestRun & { statusIsTests: boolean }>();
  const order: string[] = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("{")) continue;
    let event: unknown;
    try {
      event = JSON.parse(line);
    } catch {
      continue;
    }
    if (!isObject(event) || !isObject(event.message)) continue;
    const content = event.message.content;
    if (!Array.isArray(content)) continue;
    for (const block of content) {
      if (!isObject(block)) continue;
      if (event.type === "assistant" && block.type === "tool_use" && block.name === "Bash") {
        const command = isObject(block.input) ? block.input.command : undefined;
        const id = block.id;
        if (typeof command !== "string" || typeof id !== "string" || uses.has(id)) continue;
        const found = findTestCommand(command);
        if (!found) continue;
        uses.set(id, {
          command: command.trim(),
          outcome: "unknown",
          note: "no result recorded (the agent was stopped?)",
          source: "agent",
          statusIsTests: found.statusIsTests,
        });
        order.push(id);
      } else if (event.type === "user" && block.type === "tool_result") {
        const use = typeof block.tool_use_id === "string" ? uses.get(block.tool_use_id) : undefined;
        if (!use) continue;
        const said = resultText(block.content);
        const code = /\bexit code[:\s]+(-?\d+)/i.exec(said)?.[1];
        delete use.note;
        if (block.is_error === true && refused(event, block.tool_use_id as string, said, code)) {
          use.outcome = "unknown";
          use.note = "not run: the command was refused";
        } else if (!use.statusIsTests) {
          use.outcome = "unknown";
          use.note = "the command's exit status is not the tests' own";
          if (code !== undefined) use.exitCode = Number(code);
        } else if (block.is_error === true) {
          use.outcome = "failed";
          if (code !== undefined) use.exitCode = Number(code);
        } else {
          use.outcome = "passed";
          use.exitCode = 0;
        }
      }
    }
  }
  return order.map((id) => {
    const { statusIsTests: _statusIsTests, ...run } = uses.get(id) as TestRun & { statusIsTests: boolean };
    return run;
  });
}

/**
 * The test runs a report's sections (the agent's own words: what shipped, decisions, what needs
 * judgment) name: each line naming a test command, its outcome only where the line says it in
 * words (passed, failed, …), else unknown. The report's frontmatter, title and the daemon's own
 * sections are not read.
 */
export function testRunsInReport(markdown: string): TestRun[] {
  const body = markdown.replace(/^---\n[\s\S]*?\n---\n/, "");
  const sections = parseReportSections(body);
  if (!sections) return [];
  const runs: TestRun[] = [];
  const seen = new Set<string>();
  for (const raw of Object.values(sections).join("\n").split(/\r?\n/)) {
    const line = raw.replace(/^\s*(?:[-*+]|\d+[.)])\s+/, "").trim();
    if (!line || line.startsWith("#")) continue;
    const quoted = [...line.matchAll(/`([^`]+)`/g)].map((match) => match[1] as string);
    const command =
      quoted.find((text) => findTestCommand(text)) ?? (findTestCommand(line) ? line : undefined);
    if (!command) continue;
    const passed = /\b(?:pass(?:ed|es|ing)?|green|succeed(?:ed|s)?)\b|✓|✅/i.test(line);
    const failed = /\b(?:fail(?:ed|s|ing|ures?)?|errors?|red|broken)\b|✗|❌/i.test(line);
    const outcome: TestOutcome = passed === failed ? "unknown" : passed ? "passed" : "failed";
    const key = `${command}|${outcome}`;
    if (seen.has(key)) continue;
    seen.add(key);
    runs.push({ command: command.slice(0, 200), outcome, source: "report" });
  }
  return runs;
}

/** The test runs of a dispatch: every attempt's stream in order, then what its report names. */
export async function readTestRuns(sessionDir: string, report: string | undefined): Promise<TestRun[]> {
  const names = await readdir(sessionDir).catch(() => [] as string[]);
  const streams = names
    .map((name) => ({ name, number: Number(/^stream-(\d+)\.jsonl$/.exec(name)?.[1]) }))
    .filter((entry) => Number.isInteger(entry.number))
    .sort((a, b) => a.number - b.number);
  const runs: TestRun[] = [];
  for (const stream of streams) {
    const text = await readFile(join(sessionDir, stream.name), "utf8").catch(() => "");
    runs.push(...testRunsInStream(text));
  }
  if (report) runs.push(...testRunsInReport(report));
  return runs;
}

import type { RouteMatch } from "@gstack/contracts";
import fc from "fast-check";
import picomatch from "picomatch";
import { describe, expect, it } from "vitest";
import { matcherFor, matchRoute, normalizeTaskPath, routeMatchKeys } from "./match-route";

describe("matchRoute", () => {
  it("matches files with globs against any touched path", () => {
    const match: RouteMatch = { project: "baku", files: ["calendar/*"] };
    const result = matchRoute(match, { project: "baku", files: ["README.md", "./calendar/api.ts"] });
    expect(result.matched).toBe(true);
    expect(result.checks.map((check) => check.reason)).toEqual([
      'project "baku" matches "baku"',
      'file "calendar/api.ts" matches "calendar/*"',
    ]);
  });

  it("keeps glob semantics: * stays in one folder, ** crosses folders", () => {
    expect(matchRoute({ files: ["calendar/*"] }, { files: ["calendar/sub/x.ts"] }).matched).toBe(false);
    expect(matchRoute({ files: ["calendar/**"] }, { files: ["calendar/sub/x.ts"] }).matched).toBe(true);
    expect(matchRoute({ files: ["**/*.sql"] }, { files: ["db\\migrations\\001.sql"] }).matched).toBe(true);
    expect(matchRoute({ files: ["config/*"] }, { files: ["config/.env"] }).matched).toBe(true);
  });

  it("needs every key to hold and reports each failed key with a reason", () => {
    const match: RouteMatch = { project: ["baku", "kitsune"], task_type: "security", branch: "release/*" };
    const result = matchRoute(match, { project: "widget", task_type: "Security" });
    expect(result.matched).toBe(false);
    const failed = result.checks.filter((check) => !check.held);
    expect(failed.map((check) => check.key)).toEqual(["project", "branch"]);
    expect(failed[0]!.reason).toBe('project "widget" matches none of "baku", "kitsune"');
    expect(failed[1]!.reason).toBe("the task gives no branch");
    expect(result.checks.find((check) => check.key === "task_type")!.held).toBe(true);
  });

  it("compares task_type and agent without case, project and branch with case", () => {
    expect(matchRoute({ task_type: "security" }, { task_type: "SECURITY" }).matched).toBe(true);
    expect(matchRoute({ agent: "wintermute" }, { agent: "Wintermute" }).matched).toBe(true);
    expect(matchRoute({ project: "baku" }, { project: "Baku" }).matched).toBe(false);
    expect(matchRoute({ branch: "garrytan/*" }, { branch: "garrytan/auth-flow" }).matched).toBe(true);
  });

  it("says so when the task names no files", () => {
    const result = matchRoute({ files: ["src/**"] }, { files: [] });
    expect(result.matched).toBe(false);
    expect(result.checks[0]!.reason).toBe("the task names no files");
  });

  it("normalises touched paths", () => {
    expect(normalizeTaskPath("././a\\b.ts")).toBe("a/b.ts");
  });

  const value = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/);
  const task = fc.record(
    {
      project: value,
      task_type: value,
      branch: value,
      agent: value,
      files: fc.array(fc.stringMatching(/^[a-z]{1,4}(\/[a-z]{1,4}){0,2}\.ts$/), { maxLength: 4 }),
    },
    { requiredKeys: [] },
  );
  const match = fc.record(
    {
      project: fc.oneof(value, fc.array(value, { minLength: 1, maxLength: 3 })),
      task_type: fc.oneof(value, fc.constant("*")),
      branch: fc.constantFrom("*", "main", "feature-*"),
      agent: value,
      files: fc.array(fc.constantFrom("**", "src/**", "*.ts", "a/*.ts"), { minLength: 1, maxLength: 2 }),
    },
    { requiredKeys: [] },
  );

  it("an empty match matches every task", () => {
    fc.assert(fc.property(task, (anyTask) => matchRoute({}, anyTask).matched));
  });

  it("adding a key never makes a route match more tasks", () => {
    fc.assert(
      fc.property(match, task, fc.constantFrom(...routeMatchKeys), (anyMatch, anyTask, key) => {
        const { [key]: _dropped, ...fewer } = anyMatch;
        if (matchRoute(anyMatch, anyTask).matched) expect(matchRoute(fewer, anyTask).matched).toBe(true);
      }),
    );
  });

  it("matches exactly when every check held, with one check per key present", () => {
    fc.assert(
      fc.property(match, task, (anyMatch, anyTask) => {
        const result = matchRoute(anyMatch, anyTask);
        expect(result.checks.map((check) => check.key)).toEqual(
          routeMatchKeys.filter((key) => anyMatch[key] !== undefined),
        );
        expect(result.matched).toBe(result.checks.every((check) => check.held));
      }),
    );
  });

  it("a literal value always matches itself", () => {
    fc.assert(
      fc.property(value, value, (project, taskType) => {
        expect(matchRoute({ project, task_type: taskType }, { project, task_type: taskType }).matched).toBe(
          true,
        );
      }),
    );
  });
});

describe("literal patterns", () => {
  // Mostly letters that case folding could confuse with a non-ASCII one.
  const segment = fc.oneof(
    fc.string({
      unit: fc.constantFrom("s", "k", "i", "S", "K", "I", "a", "0", "_", "-"),
      minLength: 1,
      maxLength: 5,
    }),
    fc.stringMatching(/^[A-Za-z0-9_-]{1,5}$/),
  );
  const literal = fc
    .array(fc.tuple(fc.constantFrom(".", "/"), segment), { maxLength: 3 })
    .chain((rest) => segment.map((first) => first + rest.map(([join, part]) => join + part).join("")));
  // Long s, Kelvin sign, dotless i and dotted capital I: non-ASCII letters whose case
  // mappings land on ASCII ones.
  const lookalikes: Record<string, string> = { s: "\u017F", k: "\u212A", i: "\u0131", I: "\u0130" };
  const variantOf = (pattern: string) =>
    fc.oneof(
      fc.constant(pattern),
      fc
        .array(fc.nat(3), { minLength: pattern.length, maxLength: pattern.length })
        .map((picks) =>
          [...pattern]
            .map(
              (char, index) =>
                [
                  char,
                  char.toUpperCase(),
                  char.toLowerCase(),
                  lookalikes[char.toLowerCase()] ?? lookalikes[char] ?? char,
                ][picks[index]!],
            )
            .join(""),
        ),
      fc
        .tuple(fc.nat(pattern.length), fc.constantFrom("é", "-", ".", "/", "*", "x"), fc.boolean())
        .map(([at, char, replace]) => pattern.slice(0, at) + char + pattern.slice(at + (replace ? 1 : 0))),
      fc.string({ maxLength: 6 }),
    );

  it("answers as picomatch's expression would, with and without case", () => {
    fc.assert(
      fc.property(
        literal.chain((pattern) => fc.tuple(fc.constant(pattern), variantOf(pattern))),
        fc.boolean(),
        ([pattern, input], nocase) => {
          const expected = picomatch.makeRe(pattern, { dot: true, nocase }).test(input);
          expect(matcherFor(pattern, nocase)(input)).toBe(expected);
        },
      ),
      { numRuns: 3000 },
    );
  });

  it.each([
    ["security", "SECURITY", true, true],
    ["security", "ſecurity", true, false],
    ["kitsune", "\u212Aitsune", true, false],
    ["docs/README.md", "docs/README.md", false, true],
    ["docs/README.md", "docs/readme.md", false, false],
    ["a.b", "axb", false, false],
    ["a.b", "AXB", true, false],
    ["a.b", "A.B", true, true],
  ])("%s against %s (ignoring case: %s) is %s", (pattern, input, nocase, held) => {
    expect(matcherFor(pattern, nocase)(input)).toBe(held);
    expect(picomatch.makeRe(pattern, { dot: true, nocase }).test(input)).toBe(held);
  });

  it("leaves glob syntax to picomatch", () => {
    expect(matcherFor("acme-*", false)("acme-baku")).toBe(true);
    expect(matcherFor("./a", false)("a")).toBe(true);
    expect(matcherFor("{a,b}", false)("b")).toBe(true);
  });
});

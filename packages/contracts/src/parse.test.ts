import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { stringify as toYaml } from "yaml";
import { ContractError } from "./errors";
import { checkValue, parseJson, parseJsonLines, parseValue, parseYaml } from "./parse";

const dispatch = {
  id: "dispatch-auth",
  dispatched_by: "wintermute",
  task: "Build the auth flow",
  project: "baku",
  project_dir: "~/git/baku",
};

function caught(run: () => unknown): ContractError {
  try {
    run();
  } catch (error) {
    if (ContractError.isInstance(error)) return error;
    throw error;
  }
  throw new Error("expected a ContractError");
}

describe("parseValue", () => {
  it("returns the typed document with defaults applied and unknown fields kept", () => {
    const value = parseValue("dispatch", { ...dispatch, priority: "high" });
    expect(value.target_agent).toBe("claude");
    expect((value as Record<string, unknown>).priority).toBe("high");
  });

  it("names the source, every field path and the rule broken", () => {
    const error = caught(() =>
      parseValue(
        "dispatch",
        { ...dispatch, task: "", ttl_seconds: 5, learnings: ["ok", 3] },
        { source: "/home/u/.gstack/dispatch/dispatch-auth.json" },
      ),
    );
    expect(error.kind).toBe("dispatch");
    expect(error.source).toBe("/home/u/.gstack/dispatch/dispatch-auth.json");
    expect(error.issues).toEqual(
      expect.arrayContaining([
        { path: "task", rule: "too_small", message: "must be at least 1 character(s) long" },
        { path: "ttl_seconds", rule: "too_small", message: "must be at least 60" },
        { path: "learnings[1]", rule: "invalid_type", message: "must be a string, got number 3" },
      ]),
    );
    expect(error.message).toContain("/home/u/.gstack/dispatch/dispatch-auth.json: invalid dispatch");
    expect(error.message).toContain("learnings[1]: must be a string, got number 3 [invalid_type]");
  });

  it("says a missing field is required", () => {
    const { project_dir: _missing, ...rest } = dispatch;
    const error = caught(() => parseValue("dispatch", rest));
    expect(error.issues).toContainEqual({
      path: "project_dir",
      rule: "invalid_type",
      message: "is required but missing",
    });
    expect(error.source).toBe("<input>");
  });

  it("explains enum and pattern rules in words", () => {
    const error = caught(() =>
      parseValue("dispatch", { ...dispatch, target_agent: "Copilot Agent", mode: "run", id: "x" }),
    );
    const byPath = Object.fromEntries(error.issues.map((issue) => [issue.path, issue]));
    expect(byPath.mode?.message).toBe('must be one of "execute", "plan", got the string "run"');
    expect(byPath.target_agent?.message).toContain("must be an agent name: 1 to 32 lower-case letters");
    expect(parseValue("dispatch", { ...dispatch, target_agent: "claude-acp" }).target_agent).toBe(
      "claude-acp",
    );
    expect(byPath.id?.rule).toBe("format:regex");
    expect(byPath.id?.message).toContain("must start with 'dispatch-'");
  });

  it("is recognised across copies of the package by its marker", () => {
    const error = caught(() => parseValue("heartbeat", {}));
    expect(ContractError.isInstance(error)).toBe(true);
    expect(ContractError.isInstance(new Error("x"))).toBe(false);
    expect(ContractError.isInstance({ [Symbol.for("@gstack/contracts.ContractError")]: true })).toBe(true);
  });
});

describe("checkValue", () => {
  it("returns the error instead of throwing", () => {
    const result = checkValue("heartbeat", { ts: "now" });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.issues.map((issue) => issue.path)).toContain("ts");
  });
});

describe("parseJson", () => {
  it("reports a syntax error with the source and position", () => {
    const error = caught(() => parseJson("dispatch", '{"id": "dispatch-x",', { source: "d.json" }));
    expect(error.source).toBe("d.json");
    expect(error.issues).toHaveLength(1);
    expect(error.issues[0]!.rule).toBe("json");
    expect(error.issues[0]!.message).toMatch(/^is not valid JSON: .*position/);
  });

  it("round-trips any valid document through JSON", () => {
    fc.assert(
      fc.property(
        fc.record({
          task: fc.string({ minLength: 1 }),
          learnings: fc.array(fc.string()),
          ttl_seconds: fc.integer({ min: 60, max: 86_400 }),
          extra: fc.jsonValue(),
        }),
        (fields) => {
          const document = { ...dispatch, ...fields, target_agent: "claude" };
          const parsed = parseJson("dispatch", JSON.stringify(document));
          expect(parsed).toEqual(JSON.parse(JSON.stringify(document)));
        },
      ),
    );
  });
});

describe("parseYaml", () => {
  it("reports a syntax error with line and column", () => {
    const text = "routes:\n  - match: {project: baku\n    skills: [a]\n";
    const error = caught(() => parseYaml("routing", text, { source: "routing.yaml" }));
    expect(error.source).toBe("routing.yaml");
    expect(error.issues[0]!.rule).toBe("yaml");
    expect(error.issues[0]!.message).toMatch(/^line \d+, column \d+: /);
  });

  it("refuses duplicate keys", () => {
    const error = caught(() => parseYaml("daemon-config", "telemetry: off\ntelemetry: on\n"));
    expect(error.issues[0]!.rule).toBe("yaml");
    expect(error.issues[0]!.message).toContain("line 2");
  });

  it("points a schema error at the line of the field", () => {
    const text = [
      "routes:",
      "  - match:",
      "      project: baku",
      "    skills: [gstack-ship]",
      "  - match:",
      "      projcet: baku",
      "    skills: [gstack-cso]",
      "",
    ].join("\n");
    const error = caught(() => parseYaml("routing", text, { source: "routing.yaml" }));
    expect(error.issues).toHaveLength(1);
    expect(error.issues[0]!.path).toBe("routes[1].match");
    expect(error.issues[0]!.rule).toBe("unrecognized_keys");
    expect(error.issues[0]!.message).toContain('"projcet"');
    expect(error.issues[0]!.message).toContain("(line 6, column 7)");
  });

  it("points a wrong value at its own line", () => {
    const error = caught(() =>
      parseYaml("daemon-config", "telemetry: off\ndispatch:\n  max_concurrent: 99\n"),
    );
    expect(error.issues[0]!.path).toBe("dispatch.max_concurrent");
    expect(error.issues[0]!.message).toContain("(line 3, column 19)");
  });

  it("reads YAML 1.2 core scalars and keeps gstack's other keys", () => {
    const config = parseYaml(
      "daemon-config",
      "telemetry: off\ndispatch_max_concurrent: 4\nproactive: true\n",
    );
    expect(config).toMatchObject({ telemetry: "off", dispatch_max_concurrent: 4, proactive: true });
  });

  it("round-trips any valid routing table through YAML", () => {
    const names = fc.array(fc.string({ minLength: 1 }), { minLength: 1, maxLength: 3 });
    const route = fc.record(
      {
        name: fc.string({ minLength: 1 }),
        match: fc.record(
          { project: fc.oneof(fc.string({ minLength: 1 }), names), files: names, branch: names },
          { requiredKeys: [] },
        ),
        load: names,
        skills: names,
      },
      { requiredKeys: ["match", "skills"] },
    );
    fc.assert(
      fc.property(fc.array(route, { maxLength: 4 }), (routes) => {
        const document = { version: 1 as const, routes };
        expect(parseYaml("routing", toYaml(document))).toEqual(document);
      }),
    );
  });

  it("treats an empty file as an empty document", () => {
    expect(parseYaml("daemon-config", "")).toEqual({});
  });
});

describe("parseJsonLines", () => {
  it("keeps good lines and reports bad ones by line number without losing any", () => {
    const good = { type: "pattern", key: "a", insight: "x" };
    const text = [
      JSON.stringify(good),
      "{broken",
      "",
      JSON.stringify({ ...good, confidence: 11 }),
      JSON.stringify({ ...good, key: "b" }),
    ].join("\n");
    const { entries, problems } = parseJsonLines("learning", text, { source: "learnings.jsonl" });
    expect(entries.map((entry) => [entry.line, entry.value.key])).toEqual([
      [1, "a"],
      [5, "b"],
    ]);
    expect(problems.map((problem) => problem.line)).toEqual([2, 4]);
    expect(problems[0]!.error.source).toBe("learnings.jsonl:2");
    expect(problems[1]!.error.issues[0]!.path).toBe("confidence");
  });

  it("tolerates Windows line endings", () => {
    const text = `${JSON.stringify({ type: "tool", key: "k", insight: "i" })}\r\n`;
    expect(parseJsonLines("learning", text).entries).toHaveLength(1);
  });
});

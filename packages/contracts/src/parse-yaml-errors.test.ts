import { describe, expect, it } from "vitest";
import { ContractError } from "./errors";
import { parseValue, parseYaml } from "./parse";

function errorOf(text: string): ContractError {
  try {
    parseYaml("routing", text, { source: "routing.yaml" });
  } catch (error) {
    if (ContractError.isInstance(error)) return error;
    throw error;
  }
  throw new Error("expected a ContractError");
}

describe("parseYaml positions", () => {
  it("names line and column of a syntax error once, with the yaml rule", () => {
    const error = errorOf('routes:\n  - match: { project: "baku"\n    load: [x]\n');
    expect(error.issues).toHaveLength(1);
    expect(error.issues[0]!.rule).toBe("yaml");
    expect(error.issues[0]!.message).toMatch(/^line 3, column 5: /);
    expect(error.issues[0]!.message).not.toMatch(/at line/);
  });

  it("points an unknown key at the key itself, not at its object", () => {
    const error = errorOf(
      "routes:\n  - match:\n      task_type: security\n      flies: [x]\n    skills: [a]\n",
    );
    const issue = error.issues.find((candidate) => candidate.rule === "unrecognized_keys");
    expect(issue?.path).toBe("routes[0].match");
    expect(issue?.message).toContain('"flies"');
    expect(issue?.message).toContain("(line 4, column 7)");
  });

  it("says which types a union accepts instead of 'Invalid input'", () => {
    const error = errorOf("routes:\n  - match: { task_type: 3 }\n    skills: [a]\n");
    const issue = error.issues.find((candidate) => candidate.path === "routes[0].match.task_type");
    expect(issue?.message).toMatch(/^must be a string or a list, got number 3 \(line 2, column 25\)$/);
  });
});

describe("parseValue messages", () => {
  it("tells a wrong type from a missing field", () => {
    let message = "";
    try {
      parseValue("dispatch", { id: 3 });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain("id: must be a string, got number 3 [invalid_type]");
    expect(message).toContain("task: is required but missing [invalid_type]");
  });
});

import { describe, expect, it } from "vitest";
import { allJsonSchemas } from "./json-schema";
import {
  compareSchemaSets,
  compareSchemas,
  hasBreakingChange,
  type JsonSchema,
} from "./schema-compatibility";

const base = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  properties: {
    id: { type: "string", pattern: "^dispatch-" },
    task: { type: "string", minLength: 1, maxLength: 100 },
    ttl: { type: "integer", minimum: 60, maximum: 86_400 },
    agent: { type: "string", enum: ["claude", "codex"], default: "claude" },
    tags: { type: "array", items: { type: "string" } },
    url: { type: "string", format: "uri" },
    note: { type: "string" },
  },
  required: ["id", "task"],
  additionalProperties: {},
};

type Edit = (schema: typeof base & Record<string, unknown>) => void;

function changed(edit: Edit) {
  const after = structuredClone(base) as typeof base & Record<string, unknown>;
  edit(after);
  return compareSchemas("dispatch", base, after).map(({ path, severity, rule }) => ({
    path,
    severity,
    rule,
  }));
}

describe("compareSchemas: breaking changes", () => {
  it.each<[string, Edit, { path: string; rule: string }]>([
    [
      "a required field removed",
      (s) => {
        delete (s.properties as Record<string, unknown>).task;
      },
      { path: "task", rule: "field-removed" },
    ],
    [
      "an optional field removed",
      (s) => {
        delete (s.properties as Record<string, unknown>).note;
      },
      { path: "note", rule: "field-removed" },
    ],
    [
      "a type changed",
      (s) => {
        s.properties.ttl.type = "string";
      },
      { path: "ttl", rule: "type-changed" },
    ],
    [
      "number narrowed to integer",
      (s) => {
        (s.properties.note as Record<string, unknown>).type = "integer";
      },
      { path: "note", rule: "type-changed" },
    ],
    [
      "an enum value removed",
      (s) => {
        s.properties.agent.enum = ["claude"];
      },
      { path: "agent", rule: "enum-value-removed" },
    ],
    [
      "a new required field",
      (s) => {
        (s.properties as Record<string, unknown>).owner = { type: "string" };
        s.required = [...s.required, "owner"];
      },
      { path: "owner", rule: "required-field-added" },
    ],
    [
      "an optional field made required",
      (s) => {
        s.required = [...s.required, "note"];
      },
      { path: "note", rule: "field-now-required" },
    ],
    [
      "a raised minimum",
      (s) => {
        s.properties.ttl.minimum = 120;
      },
      { path: "ttl", rule: "bound-tightened" },
    ],
    [
      "a lowered maximum",
      (s) => {
        s.properties.ttl.maximum = 3600;
      },
      { path: "ttl", rule: "bound-tightened" },
    ],
    [
      "a new maxLength",
      (s) => {
        (s.properties.note as Record<string, unknown>).maxLength = 10;
      },
      { path: "note", rule: "bound-tightened" },
    ],
    [
      "a raised minLength",
      (s) => {
        s.properties.task.minLength = 5;
      },
      { path: "task", rule: "bound-tightened" },
    ],
    [
      "a new pattern",
      (s) => {
        (s.properties.note as Record<string, unknown>).pattern = "^x";
      },
      { path: "note", rule: "pattern-added" },
    ],
    [
      "a changed pattern",
      (s) => {
        s.properties.id.pattern = "^task-";
      },
      { path: "id", rule: "pattern-changed" },
    ],
    [
      "a new format",
      (s) => {
        (s.properties.note as Record<string, unknown>).format = "email";
      },
      { path: "note", rule: "format-added" },
    ],
    [
      "additionalProperties closed",
      (s) => {
        s.additionalProperties = false as never;
      },
      { path: "", rule: "object-closed" },
    ],
    [
      "a changed default",
      (s) => {
        s.properties.agent.default = "codex";
      },
      { path: "agent", rule: "default-changed" },
    ],
    [
      "a new constraint on array items",
      (s) => {
        (s.properties.tags.items as Record<string, unknown>).minLength = 1;
      },
      { path: "tags[]", rule: "bound-tightened" },
    ],
    [
      "a value fixed to a list",
      (s) => {
        (s.properties.note as Record<string, unknown>).enum = ["a"];
      },
      { path: "note", rule: "values-restricted" },
    ],
    [
      "items must be unique",
      (s) => {
        (s.properties.tags as Record<string, unknown>).uniqueItems = true;
      },
      { path: "tags", rule: "bound-tightened" },
    ],
    [
      "an unknown keyword added",
      (s) => {
        (s.properties.note as Record<string, unknown>).not = { const: "" };
      },
      { path: "note", rule: "keyword-changed" },
    ],
  ])("%s", (_name, edit, expected) => {
    const changes = changed(edit);
    expect(changes).toContainEqual({ ...expected, severity: "breaking" });
  });
});

describe("compareSchemas: additive changes", () => {
  it.each<[string, Edit, { path: string; rule: string }]>([
    [
      "a new optional field",
      (s) => {
        (s.properties as Record<string, unknown>).branch = { type: "string" };
      },
      { path: "branch", rule: "optional-field-added" },
    ],
    [
      "a lowered minimum",
      (s) => {
        s.properties.ttl.minimum = 30;
      },
      { path: "ttl", rule: "bound-loosened" },
    ],
    [
      "a raised maximum",
      (s) => {
        s.properties.ttl.maximum = 172_800;
      },
      { path: "ttl", rule: "bound-loosened" },
    ],
    [
      "a removed maxLength",
      (s) => {
        delete (s.properties.task as Record<string, unknown>).maxLength;
      },
      { path: "task", rule: "bound-loosened" },
    ],
    [
      "a new enum value",
      (s) => {
        s.properties.agent.enum = ["claude", "codex", "gemini"];
      },
      { path: "agent", rule: "enum-value-added" },
    ],
    [
      "a removed pattern",
      (s) => {
        delete (s.properties.id as Record<string, unknown>).pattern;
      },
      { path: "id", rule: "pattern-removed" },
    ],
    [
      "a required field made optional",
      (s) => {
        s.required = ["id"];
      },
      { path: "task", rule: "field-now-optional" },
    ],
    [
      "integer widened to number",
      (s) => {
        s.properties.ttl.type = "number";
      },
      { path: "ttl", rule: "type-widened" },
    ],
    [
      "a second type allowed",
      (s) => {
        (s.properties.note as Record<string, unknown>).type = ["string", "null"];
      },
      { path: "note", rule: "type-widened" },
    ],
  ])("%s", (_name, edit, expected) => {
    const changes = changed(edit);
    expect(changes).toEqual([{ ...expected, severity: "additive" }]);
  });

  it("opening a closed object is additive", () => {
    const closed = { ...base, additionalProperties: false };
    expect(compareSchemas("x", closed, base)).toEqual([
      expect.objectContaining({ path: "", severity: "additive", rule: "object-opened" }),
    ]);
  });

  it("ignores descriptions, titles and ids", () => {
    const after = structuredClone(base) as Record<string, unknown>;
    after.description = "now documented";
    after.title = "Dispatch";
    after.$id = "https://example.com/other";
    (after.properties as Record<string, Record<string, unknown>>).task!.description = "what to do";
    expect(compareSchemas("x", base, after)).toEqual([]);
  });

  it("finds nothing between identical schemas", () => {
    expect(compareSchemas("x", base, structuredClone(base))).toEqual([]);
  });
});

describe("compareSchemas: nesting", () => {
  const routing = (
    matchProperties: Record<string, JsonSchema>,
    additionalProperties: JsonSchema = false,
  ) => ({
    type: "object",
    properties: {
      routes: {
        type: "array",
        items: {
          type: "object",
          properties: { match: { type: "object", properties: matchProperties, additionalProperties } },
          required: ["match"],
        },
      },
    },
  });

  it("names the nested path of a change", () => {
    const changes = compareSchemas(
      "routing",
      routing({ project: { type: "string" } }),
      routing({ project: { type: "string" }, branch: { type: "string" } }),
    );
    expect(changes).toEqual([
      expect.objectContaining({
        path: "routes[].match.branch",
        severity: "additive",
        rule: "optional-field-added",
      }),
    ]);
  });

  it("compares anyOf branches in place", () => {
    const oneOrMany = (minItems: number) => ({
      anyOf: [{ type: "string" }, { type: "array", items: { type: "string" }, minItems }],
    });
    const tightened = compareSchemas(
      "r",
      routing({ project: oneOrMany(1) }),
      routing({ project: oneOrMany(2) }),
    );
    expect(tightened).toEqual([
      expect.objectContaining({
        path: "routes[].match.project<anyOf[1]>",
        severity: "breaking",
        rule: "bound-tightened",
      }),
    ]);
    const removed = compareSchemas(
      "r",
      routing({ project: oneOrMany(1) }),
      routing({ project: { anyOf: [{ type: "string" }] } }),
    );
    expect(hasBreakingChange(removed)).toBe(true);
  });

  it("ends on recursive schemas", () => {
    const tree = (labelType: string) => ({
      $ref: "#/$defs/node",
      $defs: {
        node: {
          type: "object",
          properties: {
            label: { type: labelType },
            children: { type: "array", items: { $ref: "#/$defs/node" } },
          },
        },
      },
    });
    expect(compareSchemas("tree", tree("string"), tree("integer"))).toEqual([
      expect.objectContaining({ path: "label", severity: "breaking", rule: "type-changed" }),
    ]);
  });

  it("follows local $ref pointers, at every place they are used", () => {
    const withReference = (type: string) => ({
      $defs: { slug: { type } },
      type: "object",
      properties: { project: { $ref: "#/$defs/slug" }, other: { $ref: "#/$defs/slug" } },
    });
    expect(compareSchemas("x", withReference("string"), withReference("integer"))).toEqual([
      expect.objectContaining({ path: "project", severity: "breaking", rule: "type-changed" }),
      expect.objectContaining({ path: "other", severity: "breaking", rule: "type-changed" }),
    ]);
  });
});

describe("compareSchemaSets", () => {
  it("reports added and removed document kinds", () => {
    const changes = compareSchemaSets({ a: { type: "object" }, b: {} }, { a: { type: "object" }, c: {} });
    expect(changes).toEqual([
      expect.objectContaining({ schema: "b", severity: "breaking", rule: "schema-removed" }),
      expect.objectContaining({ schema: "c", severity: "additive", rule: "schema-added" }),
    ]);
  });

  it("finds no change between the current schemas and themselves", () => {
    const current = allJsonSchemas() as Record<string, JsonSchema>;
    expect(compareSchemaSets(current, structuredClone(current))).toEqual([]);
  });

  it("reports a field removed from a real schema", () => {
    const current = allJsonSchemas().dispatch as Record<string, unknown>;
    const withoutFiles = structuredClone(current) as { properties: Record<string, unknown> };
    delete withoutFiles.properties.files;
    const changes = compareSchemas("dispatch", current, withoutFiles);
    expect(changes).toEqual([
      expect.objectContaining({ path: "files", rule: "field-removed", severity: "breaking" }),
    ]);
  });
});

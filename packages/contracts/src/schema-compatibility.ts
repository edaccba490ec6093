/**
 * Compares two versions of a set of JSON Schemas and classifies every change.
 *
 * The rule (see COMPATIBILITY.md): a change is additive when every document valid under
 * the old schema stays valid under the new one and keeps its meaning; anything else is
 * breaking. So a new optional field, a looser bound or a new enum value is additive, while
 * a removed field, a changed type, a tighter bound, a new required field, a closed object
 * or a changed default is breaking. Where a change cannot be judged structurally (a
 * rewritten pattern, an unknown keyword) it is called breaking, so the check errs on the
 * side of asking for a major version.
 */

/** A JSON Schema node as read from a `.schema.json` file. */
export type JsonSchema = boolean | { [keyword: string]: unknown };

export type ChangeSeverity = "breaking" | "additive";

/** One classified difference between two schema versions. */
export interface SchemaChange {
  /** The schema file or document kind, e.g. `dispatch`. */
  schema: string;
  /** Where in the document the change applies, e.g. `routes[].match.project`; empty for the root. */
  path: string;
  severity: ChangeSeverity;
  /** A stable name for the kind of change, e.g. `field-removed`, `bound-tightened`. */
  rule: string;
  /** A sentence saying what changed. */
  message: string;
}

const lowerBounds = ["minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains"];
const upperBounds = ["maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains"];
/** Keywords that describe but never constrain; changes to them are ignored. */
const annotations = new Set([
  "$schema",
  "$id",
  "$comment",
  "title",
  "description",
  "examples",
  "deprecated",
  "readOnly",
  "writeOnly",
  "$defs",
  "definitions",
]);
const handled = new Set([
  ...lowerBounds,
  ...upperBounds,
  "type",
  "enum",
  "const",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "pattern",
  "format",
  "default",
  "anyOf",
  "oneOf",
  "allOf",
  "multipleOf",
  "uniqueItems",
  "$ref",
]);

interface Context {
  schema: string;
  beforeRoot: JsonSchema;
  afterRoot: JsonSchema;
  changes: SchemaChange[];
  seenReferences: Set<string>;
}

/**
 * Classifies every change between two sets of schemas keyed by name (file name or kind).
 * A schema present only in `after` is additive; one present only in `before` is breaking.
 */
export function compareSchemaSets(
  before: Record<string, JsonSchema>,
  after: Record<string, JsonSchema>,
): SchemaChange[] {
  const changes: SchemaChange[] = [];
  for (const name of Object.keys(before).sort()) {
    if (!(name in after)) {
      changes.push({
        schema: name,
        path: "",
        severity: "breaking",
        rule: "schema-removed",
        message: "the document kind was removed",
      });
    }
  }
  for (const name of Object.keys(after).sort()) {
    if (!(name in before)) {
      changes.push({
        schema: name,
        path: "",
        severity: "additive",
        rule: "schema-added",
        message: "a new document kind",
      });
      continue;
    }
    changes.push(...compareSchemas(name, before[name]!, after[name]!));
  }
  return changes;
}

/** Classifies every change between two versions of one schema. */
export function compareSchemas(name: string, before: JsonSchema, after: JsonSchema): SchemaChange[] {
  const context: Context = {
    schema: name,
    beforeRoot: before,
    afterRoot: after,
    changes: [],
    seenReferences: new Set(),
  };
  compareNode(context, before, after, "");
  return context.changes;
}

/** True when any change in the list is breaking. */
export function hasBreakingChange(changes: readonly SchemaChange[]): boolean {
  return changes.some((change) => change.severity === "breaking");
}

function report(context: Context, path: string, severity: ChangeSeverity, rule: string, message: string) {
  context.changes.push({ schema: context.schema, path, severity, rule, message });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (isObject(value)) {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${stableJson(value[key])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value) ?? "undefined";
}

function equal(left: unknown, right: unknown): boolean {
  return stableJson(left) === stableJson(right);
}

function resolveReference(root: JsonSchema, reference: string): JsonSchema | undefined {
  if (!reference.startsWith("#")) return undefined;
  let node: unknown = root;
  for (const raw of reference.slice(1).split("/").filter(Boolean)) {
    const segment = decodeURIComponent(raw).replaceAll("~1", "/").replaceAll("~0", "~");
    if (!isObject(node) && !Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[segment];
  }
  return typeof node === "boolean" || isObject(node) ? node : undefined;
}

function dereference(context: Context, node: JsonSchema, side: "before" | "after"): JsonSchema {
  let current = node;
  for (let depth = 0; depth < 32 && isObject(current) && typeof current.$ref === "string"; depth++) {
    const root = side === "before" ? context.beforeRoot : context.afterRoot;
    const target = resolveReference(root, current.$ref as string);
    if (target === undefined) return current;
    const { $ref: _reference, ...rest } = current;
    const constraining = Object.keys(rest).some((keyword) => !annotations.has(keyword));
    current = constraining ? { allOf: [target], ...rest } : target;
  }
  return current;
}

function childPath(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

/** The set of JSON types a node allows; undefined when it does not restrict the type. */
function typesOf(node: Record<string, unknown>): Set<string> | undefined {
  if (typeof node.type === "string") return new Set([node.type]);
  if (Array.isArray(node.type)) return new Set(node.type as string[]);
  return undefined;
}

function typeCovers(types: Set<string> | undefined, type: string): boolean {
  if (types === undefined) return true;
  return types.has(type) || (type === "integer" && types.has("number"));
}

function compareNode(context: Context, rawBefore: JsonSchema, rawAfter: JsonSchema, path: string): void {
  // A pair of references already being compared further up is a cycle (a recursive
  // schema): its changes are reported there, so stop instead of descending forever.
  const beforeReference = isObject(rawBefore) ? rawBefore.$ref : undefined;
  const afterReference = isObject(rawAfter) ? rawAfter.$ref : undefined;
  if (typeof beforeReference === "string" || typeof afterReference === "string") {
    const key = `${String(beforeReference)}=>${String(afterReference)}`;
    if (context.seenReferences.has(key)) return;
    context.seenReferences.add(key);
    try {
      compareResolved(context, rawBefore, rawAfter, path);
    } finally {
      context.seenReferences.delete(key);
    }
    return;
  }
  compareResolved(context, rawBefore, rawAfter, path);
}

function compareResolved(context: Context, rawBefore: JsonSchema, rawAfter: JsonSchema, path: string): void {
  const before = dereference(context, rawBefore, "before");
  const after = dereference(context, rawAfter, "after");
  if (equal(before, after)) return;

  if (typeof before === "boolean" || typeof after === "boolean") {
    const beforeAllowsAll = before === true || (isObject(before) && Object.keys(before).length === 0);
    const afterAllowsAll = after === true || (isObject(after) && Object.keys(after).length === 0);
    if (after === false || (beforeAllowsAll && !afterAllowsAll)) {
      report(context, path, "breaking", "constraint-added", "values that were allowed are now refused");
    } else if (afterAllowsAll) {
      report(context, path, "additive", "constraint-removed", "every value is now allowed");
    } else {
      report(
        context,
        path,
        "breaking",
        "schema-changed",
        "the schema changed in a way that cannot be compared",
      );
    }
    return;
  }

  compareTypes(context, before, after, path);
  compareValues(context, before, after, path);
  compareBounds(context, before, after, path);
  compareStringRules(context, before, after, path);
  compareDefault(context, before, after, path);
  compareObject(context, before, after, path);
  compareArray(context, before, after, path);
  compareCombinators(context, before, after, path);
  compareOtherKeywords(context, before, after, path);
}

function describeTypes(types: Set<string> | undefined): string {
  return types === undefined ? "any type" : [...types].sort().join(" | ");
}

function compareTypes(
  context: Context,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  path: string,
) {
  const beforeTypes = typesOf(before);
  const afterTypes = typesOf(after);
  if (equal(beforeTypes && [...beforeTypes].sort(), afterTypes && [...afterTypes].sort())) return;
  const lost =
    beforeTypes === undefined ? ["any"] : [...beforeTypes].filter((type) => !typeCovers(afterTypes, type));
  const message = `type changed from ${describeTypes(beforeTypes)} to ${describeTypes(afterTypes)}`;
  if (lost.length > 0 && !(beforeTypes === undefined && afterTypes === undefined)) {
    report(context, path, "breaking", "type-changed", message);
  } else {
    report(context, path, "additive", "type-widened", message);
  }
}

function compareValues(
  context: Context,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  path: string,
) {
  const beforeValues = allowedValues(before);
  const afterValues = allowedValues(after);
  if (beforeValues === undefined && afterValues === undefined) return;
  if (afterValues === undefined) {
    report(context, path, "additive", "values-unrestricted", "the list of allowed values was lifted");
    return;
  }
  if (beforeValues === undefined) {
    report(context, path, "breaking", "values-restricted", "the value is now restricted to a fixed list");
    return;
  }
  const afterKeys = new Set(afterValues.map(stableJson));
  const beforeKeys = new Set(beforeValues.map(stableJson));
  const removed = beforeValues.filter((value) => !afterKeys.has(stableJson(value)));
  const added = afterValues.filter((value) => !beforeKeys.has(stableJson(value)));
  if (removed.length > 0) {
    report(
      context,
      path,
      "breaking",
      "enum-value-removed",
      `allowed value(s) removed: ${removed.map((value) => JSON.stringify(value)).join(", ")}`,
    );
  }
  if (added.length > 0) {
    report(
      context,
      path,
      "additive",
      "enum-value-added",
      `allowed value(s) added: ${added.map((value) => JSON.stringify(value)).join(", ")}`,
    );
  }
}

function allowedValues(node: Record<string, unknown>): unknown[] | undefined {
  if ("const" in node) return [node.const];
  if (Array.isArray(node.enum)) return node.enum;
  return undefined;
}

function compareBounds(
  context: Context,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  path: string,
) {
  for (const [keywords, tighter] of [
    [lowerBounds, (old: number, now: number) => now > old],
    [upperBounds, (old: number, now: number) => now < old],
  ] as const) {
    for (const keyword of keywords) {
      const old = before[keyword];
      const now = after[keyword];
      if (equal(old, now)) continue;
      if (typeof now === "number" && (typeof old !== "number" || tighter(old, now))) {
        const from = typeof old === "number" ? ` from ${old}` : "";
        report(context, path, "breaking", "bound-tightened", `${keyword} tightened${from} to ${now}`);
      } else {
        const to = typeof now === "number" ? ` to ${now}` : " (removed)";
        report(context, path, "additive", "bound-loosened", `${keyword} loosened from ${String(old)}${to}`);
      }
    }
  }
  if (!equal(before.multipleOf, after.multipleOf)) {
    const old = before.multipleOf;
    const now = after.multipleOf;
    const loosened =
      now === undefined ||
      (typeof old === "number" && typeof now === "number" && Number.isInteger(old / now) && old / now >= 1);
    report(
      context,
      path,
      loosened ? "additive" : "breaking",
      loosened ? "bound-loosened" : "bound-tightened",
      `multipleOf changed from ${String(old)} to ${String(now)}`,
    );
  }
  if (before.uniqueItems !== true && after.uniqueItems === true) {
    report(context, path, "breaking", "bound-tightened", "items must now be unique");
  } else if (before.uniqueItems === true && after.uniqueItems !== true) {
    report(context, path, "additive", "bound-loosened", "items no longer need to be unique");
  }
}

function compareStringRules(
  context: Context,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  path: string,
) {
  for (const keyword of ["pattern", "format"] as const) {
    const old = before[keyword];
    const now = after[keyword];
    if (equal(old, now)) continue;
    if (now === undefined) {
      report(
        context,
        path,
        "additive",
        `${keyword}-removed`,
        `${keyword} ${JSON.stringify(old)} no longer applies`,
      );
    } else if (old === undefined) {
      report(
        context,
        path,
        "breaking",
        `${keyword}-added`,
        `values must now match ${keyword} ${JSON.stringify(now)}`,
      );
    } else {
      report(
        context,
        path,
        "breaking",
        `${keyword}-changed`,
        `${keyword} changed from ${JSON.stringify(old)} to ${JSON.stringify(now)}`,
      );
    }
  }
}

function compareDefault(
  context: Context,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  path: string,
) {
  if (equal(before.default, after.default)) return;
  const message =
    after.default === undefined
      ? `the default ${JSON.stringify(before.default)} was removed`
      : before.default === undefined
        ? `a default ${JSON.stringify(after.default)} was added`
        : `the default changed from ${JSON.stringify(before.default)} to ${JSON.stringify(after.default)}`;
  report(context, path, "breaking", "default-changed", `${message}, so a missing value means something else`);
}

function compareObject(
  context: Context,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  path: string,
) {
  const beforeProperties = (isObject(before.properties) ? before.properties : {}) as Record<
    string,
    JsonSchema
  >;
  const afterProperties = (isObject(after.properties) ? after.properties : {}) as Record<string, JsonSchema>;
  const beforeRequired = new Set(Array.isArray(before.required) ? (before.required as string[]) : []);
  const afterRequired = new Set(Array.isArray(after.required) ? (after.required as string[]) : []);

  for (const name of Object.keys(beforeProperties)) {
    if (!(name in afterProperties)) {
      report(
        context,
        childPath(path, name),
        "breaking",
        "field-removed",
        `${beforeRequired.has(name) ? "required" : "optional"} field removed`,
      );
    }
  }
  for (const name of Object.keys(afterProperties)) {
    const where = childPath(path, name);
    if (!(name in beforeProperties)) {
      if (afterRequired.has(name)) {
        report(context, where, "breaking", "required-field-added", "new required field");
      } else {
        report(context, where, "additive", "optional-field-added", "new optional field");
      }
      continue;
    }
    compareNode(context, beforeProperties[name]!, afterProperties[name]!, where);
  }
  for (const name of afterRequired) {
    if (!beforeRequired.has(name) && name in beforeProperties) {
      report(
        context,
        childPath(path, name),
        "breaking",
        "field-now-required",
        "an optional field became required",
      );
    } else if (!beforeRequired.has(name) && !(name in afterProperties)) {
      report(context, childPath(path, name), "breaking", "required-field-added", "new required field");
    }
  }
  for (const name of beforeRequired) {
    if (!afterRequired.has(name) && name in afterProperties) {
      report(
        context,
        childPath(path, name),
        "additive",
        "field-now-optional",
        "a required field became optional",
      );
    }
  }

  const beforeAdditional = before.additionalProperties;
  const afterAdditional = after.additionalProperties;
  if (!equal(beforeAdditional, afterAdditional)) {
    const beforeOpen =
      beforeAdditional === undefined || beforeAdditional === true || equal(beforeAdditional, {});
    const afterOpen = afterAdditional === undefined || afterAdditional === true || equal(afterAdditional, {});
    if (beforeOpen && afterOpen) return;
    if (afterAdditional === false) {
      report(
        context,
        path,
        "breaking",
        "object-closed",
        "unknown fields are now refused (additionalProperties: false)",
      );
    } else if (beforeAdditional === false && afterOpen) {
      report(context, path, "additive", "object-opened", "unknown fields are now allowed");
    } else {
      compareNode(
        context,
        (beforeOpen ? true : beforeAdditional) as JsonSchema,
        (afterOpen ? true : afterAdditional) as JsonSchema,
        childPath(path, "*"),
      );
    }
  }
}

function compareArray(
  context: Context,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  path: string,
) {
  if (equal(before.items, after.items)) return;
  const beforeItems = (before.items ?? true) as JsonSchema;
  const afterItems = (after.items ?? true) as JsonSchema;
  compareNode(context, beforeItems, afterItems, `${path}[]`);
}

function compareCombinators(
  context: Context,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  path: string,
) {
  for (const keyword of ["anyOf", "oneOf"] as const) {
    const old = (Array.isArray(before[keyword]) ? before[keyword] : undefined) as JsonSchema[] | undefined;
    const now = (Array.isArray(after[keyword]) ? after[keyword] : undefined) as JsonSchema[] | undefined;
    if (equal(old, now)) continue;
    if (now === undefined) {
      report(context, path, "breaking", "alternatives-changed", `${keyword} was replaced; check it by hand`);
      continue;
    }
    if (old === undefined) {
      report(
        context,
        path,
        "breaking",
        "alternatives-added",
        `values must now match one of the ${keyword} branches`,
      );
      continue;
    }
    if (old.length === now.length) {
      old.forEach((branch, index) => {
        compareNode(context, branch, now[index]!, `${path}<${keyword}[${index}]>`);
      });
      continue;
    }
    const nowKeys = new Set(now.map(stableJson));
    const oldKeys = new Set(old.map(stableJson));
    if (old.some((branch) => !nowKeys.has(stableJson(branch)))) {
      report(context, path, "breaking", "alternative-removed", `a ${keyword} branch was removed or changed`);
    }
    if (now.some((branch) => !oldKeys.has(stableJson(branch)))) {
      report(context, path, "additive", "alternative-added", `a ${keyword} branch was added`);
    }
  }
  const oldAll = (Array.isArray(before.allOf) ? before.allOf : []) as JsonSchema[];
  const nowAll = (Array.isArray(after.allOf) ? after.allOf : []) as JsonSchema[];
  if (!equal(oldAll, nowAll)) {
    if (oldAll.length === nowAll.length) {
      oldAll.forEach((part, index) => {
        compareNode(context, part, nowAll[index]!, `${path}<allOf[${index}]>`);
      });
    } else {
      const oldKeys = new Set(oldAll.map(stableJson));
      const nowKeys = new Set(nowAll.map(stableJson));
      if (nowAll.some((part) => !oldKeys.has(stableJson(part)))) {
        report(context, path, "breaking", "constraint-added", "an allOf condition was added or changed");
      }
      if (oldAll.some((part) => !nowKeys.has(stableJson(part)))) {
        report(context, path, "additive", "constraint-removed", "an allOf condition was removed");
      }
    }
  }
}

function compareOtherKeywords(
  context: Context,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  path: string,
) {
  const keywords = new Set([...Object.keys(before), ...Object.keys(after)]);
  for (const keyword of keywords) {
    if (handled.has(keyword) || annotations.has(keyword)) continue;
    if (equal(before[keyword], after[keyword])) continue;
    if (after[keyword] === undefined) {
      report(context, path, "additive", "constraint-removed", `the ${keyword} rule was removed`);
    } else {
      report(context, path, "breaking", "keyword-changed", `the ${keyword} rule was added or changed`);
    }
  }
}

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  formatGstackResultLine,
  gstackDecisionSchema,
  gstackFindingSchema,
  gstackResultStatuses,
  gstackRunManifestSchema,
  gstackSeverities,
  gstackTaskSchema,
  parseGstackResultLine,
} from "./gstack-run";

const token = fc.stringMatching(/^[A-Za-z0-9._/-]{1,40}$/);
const runPath = fc
  .string({ minLength: 1, maxLength: 60 })
  .filter((text) => !/[\r\n]/.test(text) && text.trim() === text && text.length > 0);
const resultLine = fc.record({
  skill: token,
  status: fc.constantFrom(...gstackResultStatuses),
  run: runPath,
});
const otherLine = fc
  .string({ maxLength: 80 })
  .filter((text) => !text.includes("\n") && !text.startsWith("GSTACK_RESULT"));

describe("the GSTACK_RESULT line", () => {
  it("parses back what was formatted, whatever the text around it", () => {
    fc.assert(
      fc.property(
        resultLine,
        fc.array(otherLine, { maxLength: 5 }),
        fc.array(otherLine, { maxLength: 5 }),
        (line, before, after) => {
          const text = [...before, formatGstackResultLine(line), ...after].join("\n");
          expect(parseGstackResultLine(text)).toEqual(line);
        },
      ),
    );
  });

  it("takes the last line, as a parent's grep | tail -1 does", () => {
    fc.assert(
      fc.property(resultLine, resultLine, (first, last) => {
        const text = `${formatGstackResultLine(first)}\nworking…\n${formatGstackResultLine(last)}\r\n`;
        expect(parseGstackResultLine(text)).toEqual(last);
      }),
    );
  });

  it("finds nothing in text without one", () => {
    fc.assert(
      fc.property(fc.array(otherLine, { maxLength: 8 }), (lines) => {
        expect(parseGstackResultLine(lines.join("\n"))).toBeUndefined();
      }),
    );
  });

  it("refuses a last line that does not parse rather than falling back to an earlier one", () => {
    const good = formatGstackResultLine({ skill: "review", status: "complete", run: "runs/r1" });
    expect(parseGstackResultLine(`${good}\nGSTACK_RESULT: skill=review status=awaiting_result run=r`)).toBe(
      undefined,
    );
    expect(parseGstackResultLine(`${good}\nGSTACK_RESULT: skill=review status=complete`)).toBeUndefined();
    expect(
      parseGstackResultLine(`${good}\nGSTACK_RESULT: skill=review status=complete run=   `),
    ).toBeUndefined();
    expect(parseGstackResultLine(`  ${good}`)).toBeUndefined();
  });

  it("keeps spaces inside a run path", () => {
    expect(
      parseGstackResultLine("GSTACK_RESULT: skill=autoplan status=gate_pending run=/tmp/my runs/r1"),
    ).toEqual({
      skill: "autoplan",
      status: "gate_pending",
      run: "/tmp/my runs/r1",
    });
  });
});

const text = fc.string({ maxLength: 30 });
const texts = fc.array(text, { maxLength: 3 });
const runId = fc.stringMatching(/^[a-z0-9]{1,8}$/);
const extra = fc.dictionary(fc.stringMatching(/^x_[a-z]{1,6}$/), fc.jsonValue({ maxDepth: 1 }), {
  maxKeys: 2,
});

const decision = fc.record({
  schema_version: fc.constant(1 as const),
  run: runId,
  id: text.map((tail) => `r-${tail}`),
  title: text,
  options: texts,
  recommended: fc.option(text, { nil: null }),
  kind: fc.constantFrom("auto", "approval", "user_challenge"),
  status: fc.constantFrom("pending", "approved", "overridden", "rejected"),
  gate_rev: fc.integer({ min: 1, max: 50 }),
});
const finding = fc.record(
  {
    schema_version: fc.constant(1 as const),
    run: runId,
    id: text.map((tail) => `r-${tail}`),
    phase: text,
    voice: fc.constantFrom("native", "outside"),
    severity: fc.constantFrom(...gstackSeverities),
    title: text,
    line: fc.integer({ min: 1, max: 10_000 }),
    disposition: fc.constantFrom("open", "accepted", "partially_accepted", "rejected", "deferred", "fixed"),
    native_counterpart: fc.option(text, { nil: null }),
  },
  { requiredKeys: ["schema_version", "run", "id", "phase", "voice", "severity", "title"] },
);
const task = fc.record({
  schema_version: fc.constant(2 as const),
  run: runId,
  id: text.map((tail) => `r-${tail}`),
  title: text,
  status: fc.constantFrom(
    "pending",
    "ready",
    "blocked_on_dependency",
    "blocked_on_decision",
    "in_progress",
    "done",
  ),
  depends_on: texts,
  findings: texts,
  blocked_by: texts,
  acceptance: text,
});
const manifest = fc.record({
  schema_version: fc.constant(1 as const),
  run: runId,
  status: fc.constantFrom(...gstackResultStatuses, "running", "awaiting_result"),
  required_phases: texts,
  phases: fc.dictionary(
    text,
    fc.record({ native: fc.record({ status: fc.constantFrom("completed", "failed") }) }),
  ),
  artifacts: fc.dictionary(
    text,
    fc.record({ path: text.map((tail) => `a${tail}`), sha256: fc.stringMatching(/^[0-9a-f]{64}$/) }),
  ),
  consumed_by: fc.array(fc.record({ consumer: text, at: text })),
});

describe("gstack's artifact schemas", () => {
  it.each([
    ["decisions", gstackDecisionSchema, decision],
    ["findings", gstackFindingSchema, finding],
    ["tasks", gstackTaskSchema, task],
    ["run.json", gstackRunManifestSchema, manifest],
  ] as const)(
    "accept every %s row gstack may write and keep it through a JSON round trip",
    (_name, schema, rows) => {
      fc.assert(
        fc.property(rows, extra, (row, unknown) => {
          const written = JSON.stringify({ ...row, ...unknown });
          const parsed = schema.parse(JSON.parse(written));
          expect(JSON.parse(JSON.stringify(parsed))).toEqual(JSON.parse(written));
        }),
      );
    },
  );

  it("refuses a row whose schema_version is not the one it knows", () => {
    fc.assert(
      fc.property(
        task,
        fc.integer().filter((version) => version !== 2),
        (row, version) => {
          expect(gstackTaskSchema.safeParse({ ...row, schema_version: version }).success).toBe(false);
        },
      ),
    );
  });
});

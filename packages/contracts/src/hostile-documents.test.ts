import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Ajv2020 } from "ajv/dist/2020";
import addFormats from "ajv-formats";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { DocumentKind } from "./documents";
import { checkValue, parseJson } from "./parse";
import { corpus } from "./schema-corpus.test-data";

// Values that reach a command line, a path or a person's screen, tried against both the
// package (zod, after the fast checks) and the published JSON Schema (ajv): both must refuse.

const schemasDir = join(import.meta.dirname, "..", "..", "..", "schemas");
const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false });
addFormats(ajv);
const published = new Map<DocumentKind, ReturnType<typeof ajv.compile>>();
for (const kind of ["dispatch", "completion", "handoff", "activity-entry"] as const) {
  published.set(
    kind,
    ajv.compile(JSON.parse(await readFile(join(schemasDir, `${kind}.schema.json`), "utf8"))),
  );
}

function verdicts(kind: DocumentKind, document: unknown) {
  return { package: checkValue(kind, document).ok, schema: published.get(kind)!(document) };
}

const first = <T>(record: Record<string, T>): T => Object.values(record)[0] as T;
const dispatch = first(corpus.dispatch.valid) as Record<string, unknown>;
const completion = first(corpus.completion.valid) as Record<string, unknown>;
const handoff = first(corpus.handoff.valid) as Record<string, unknown>;
const activity = first(corpus["activity-entry"].valid) as Record<string, unknown>;

describe("hostile documents", () => {
  it("start from valid documents", () => {
    for (const [kind, document] of [
      ["dispatch", dispatch],
      ["completion", completion],
      ["handoff", handoff],
      ["activity-entry", activity],
    ] as const) {
      expect(verdicts(kind, document), kind).toEqual({ package: true, schema: true });
    }
  });

  it("refuse a __proto__ key at any depth of a dispatch", () => {
    const top = `{"__proto__":{"polluted":true},${JSON.stringify(dispatch).slice(1)}`;
    expect(verdicts("dispatch", JSON.parse(top))).toEqual({ package: false, schema: false });
    expect(() => parseJson("dispatch", top, { source: "d.json" })).toThrow(
      /__proto__: is a key named "__proto__"/,
    );
    const nested = JSON.parse(
      JSON.stringify({ ...dispatch, reply_to: { runtime: "openclaw" } }).replace(
        '"runtime"',
        '"__proto__":{},"runtime"',
      ),
    );
    expect(checkValue("dispatch", nested)).toMatchObject({ ok: false });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("take a pull request only as owner/repo#number", () => {
    const owner = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_-]{0,20}$/);
    const repo = fc.stringMatching(/^[A-Za-z0-9_.-]{1,30}$/).filter((name) => name !== "." && name !== "..");
    const number = fc.integer({ min: 1, max: 999_999 });
    fc.assert(
      fc.property(owner, repo, number, (o, r, n) => {
        expect(verdicts("completion", { ...completion, pr: `${o}/${r}#${n}` })).toEqual({
          package: true,
          schema: true,
        });
      }),
    );
    for (const pr of [
      "../..#1",
      "a/..#1",
      "a/b#0",
      "a/b/c#1",
      "a/b#1\n",
      "-a/b#1",
      "a/b#1; rm -rf ~",
      "https://github.com/a/b/pull/1",
    ]) {
      expect(verdicts("completion", { ...completion, pr }), pr).toEqual({ package: false, schema: false });
    }
  });

  const forbidden = fc.constantFrom(
    "\u0000",
    "\u0007",
    "\u001b",
    "\u007f",
    "\u0085",
    "\u202e",
    "\u2066",
    "\u2069",
  );

  it("refuse control characters and bidirectional overrides in a handoff's resume prompt", () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 40 }),
        forbidden,
        fc.string({ maxLength: 40 }),
        (before, bad, after) => {
          expect(verdicts("handoff", { ...handoff, resume_prompt: `${before}${bad}${after}` })).toEqual({
            package: false,
            schema: false,
          });
        },
      ),
    );
    const safe = fc
      .string({ unit: "grapheme", maxLength: 200 })
      .map((text) =>
        text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, ""),
      );
    fc.assert(
      fc.property(safe, (text) => {
        expect(verdicts("handoff", { ...handoff, resume_prompt: `Resume:\n\t${text}\r\n` })).toEqual({
          package: true,
          schema: true,
        });
      }),
    );
  });

  const safeText = fc
    .string({ unit: "grapheme", maxLength: 200 })
    .map((text) =>
      text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, ""),
    );

  it("refuse control characters and bidirectional overrides in a dispatch's task, learnings and constraints", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("task", "learnings", "constraints"),
        fc.string({ maxLength: 40 }),
        forbidden,
        fc.string({ maxLength: 40 }),
        (field, before, bad, after) => {
          const text = `${before}${bad}${after}`;
          const value = field === "task" ? text : ["fine", text];
          expect(verdicts("dispatch", { ...dispatch, [field]: value }), field).toEqual({
            package: false,
            schema: false,
          });
        },
      ),
    );
    fc.assert(
      fc.property(safeText, (text) => {
        for (const [field, value] of [
          ["task", `Fix:\n\t${text}x\r\n`],
          ["learnings", [text]],
          ["constraints", [`${text}\n`]],
        ] as const) {
          expect(verdicts("dispatch", { ...dispatch, [field]: value }), field).toEqual({
            package: true,
            schema: true,
          });
        }
      }),
    );
  });

  it("refuse a dispatch's branch or base that starts with '-' or holds a control character", () => {
    const ref = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9/._~^-]{0,30}$/);
    fc.assert(
      fc.property(fc.constantFrom("branch", "base"), ref, forbidden, (field, name, bad) => {
        for (const refused of [`-${name}`, `--${name}`, `${name}${bad}`, `${name}\n`, `${name}\t`])
          expect(verdicts("dispatch", { ...dispatch, [field]: refused }), `${field}: ${refused}`).toEqual({
            package: false,
            schema: false,
          });
        expect(verdicts("dispatch", { ...dispatch, [field]: name }), `${field}: ${name}`).toEqual({
          package: true,
          schema: true,
        });
      }),
    );
  });

  it("refuse NUL in a dispatch's project_dir and files, and take any other path", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", minLength: 1, maxLength: 40 }), (path) => {
        const clean = path.replaceAll("\u0000", "") || "/";
        expect(verdicts("dispatch", { ...dispatch, project_dir: clean, files: [clean] })).toEqual({
          package: true,
          schema: true,
        });
        const cut = `${clean}\u0000/etc`;
        expect(verdicts("dispatch", { ...dispatch, project_dir: cut })).toEqual({
          package: false,
          schema: false,
        });
        expect(verdicts("dispatch", { ...dispatch, files: [cut] })).toEqual({
          package: false,
          schema: false,
        });
      }),
    );
  });

  it("refuse a dispatch's mode in any other spelling than 'execute' or 'plan'", () => {
    for (const mode of ["execute", "plan"])
      expect(verdicts("dispatch", { ...dispatch, mode }), mode).toEqual({ package: true, schema: true });
    fc.assert(
      fc.property(
        fc.oneof(
          fc.constantFrom<unknown>("Plan", "PLAN", "plan ", " plan", "Execute", 1, 0, true, null, ["plan"], {
            plan: 1,
          }),
          fc.string({ maxLength: 8 }),
        ),
        (mode) => {
          if (mode === "plan" || mode === "execute") return;
          expect(verdicts("dispatch", { ...dispatch, mode }), JSON.stringify(mode)).toEqual({
            package: false,
            schema: false,
          });
        },
      ),
    );
  });

  it("refuse a name with nothing visible in it: a lone zero-width joiner as a skill, spaces as who dispatched", () => {
    const invisible = fc.string({
      unit: fc.constantFrom(
        " ",
        "\u00a0",
        "\u00ad",
        "\u061c",
        "\u200b",
        "\u200c",
        "\u200d",
        "\u2060",
        "\u3164",
        "\ufeff",
      ),
      minLength: 1,
      maxLength: 6,
    });
    fc.assert(
      fc.property(invisible, (name) => {
        expect(verdicts("activity-entry", { ...activity, skill: name }), JSON.stringify(name)).toEqual({
          package: false,
          schema: false,
        });
        expect(verdicts("dispatch", { ...dispatch, dispatched_by: name }), JSON.stringify(name)).toEqual({
          package: false,
          schema: false,
        });
      }),
    );
    expect(verdicts("activity-entry", { ...activity, skill: "👩\u200d💻" })).toEqual({
      package: true,
      schema: true,
    });
  });

  it("refuse a path separator, a line break or a control character in an activity skill", () => {
    const name = fc.stringMatching(/^[a-z][a-z0-9-]{0,30}$/);
    fc.assert(
      fc.property(
        name,
        fc.constantFrom("/", "\\", "\n", "\r", "\u0000", "\u202e"),
        name,
        (left, bad, right) => {
          expect(verdicts("activity-entry", { ...activity, skill: `${left}${bad}${right}` })).toEqual({
            package: false,
            schema: false,
          });
          expect(verdicts("activity-entry", { ...activity, skill: `${left}-${right}` })).toEqual({
            package: true,
            schema: true,
          });
        },
      ),
    );
    for (const skill of [".", "..", "", "x".repeat(129)]) {
      expect(verdicts("activity-entry", { ...activity, skill }), skill).toEqual({
        package: false,
        schema: false,
      });
    }
  });

  it("take an RFC 3339 leap second in any zone, and only at the end of 23:59 UTC", () => {
    const pad = (value: number) => String(value).padStart(2, "0");
    fc.assert(
      fc.property(
        fc.integer({ min: -23 * 60 - 59, max: 23 * 60 + 59 }),
        fc.integer({ min: 0, max: 23 * 60 + 59 }),
        (offsetMinutes, otherMinute) => {
          // 2016-12-31T23:59:60Z seen from a zone `offsetMinutes` ahead of UTC.
          const local = new Date(Date.UTC(2016, 11, 31, 23, 59) + offsetMinutes * 60_000);
          const zone = `${offsetMinutes < 0 ? "-" : "+"}${pad(Math.floor(Math.abs(offsetMinutes) / 60))}:${pad(Math.abs(offsetMinutes) % 60)}`;
          const day = local.toISOString().slice(0, 10);
          const at = (minuteOfDay: number) =>
            `${day}T${pad(Math.floor(minuteOfDay / 60))}:${pad(minuteOfDay % 60)}:60${zone}`;
          const leap = local.getUTCHours() * 60 + local.getUTCMinutes();
          expect(verdicts("handoff", { ...handoff, timestamp: at(leap) })).toEqual({
            package: true,
            schema: true,
          });
          if (otherMinute !== leap) {
            expect(verdicts("handoff", { ...handoff, timestamp: at(otherMinute) })).toEqual({
              package: false,
              schema: false,
            });
          }
        },
      ),
    );
  });
});

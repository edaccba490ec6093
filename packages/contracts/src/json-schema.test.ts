import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Ajv2020 } from "ajv/dist/2020";
import addFormats from "ajv-formats";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type DocumentKind, documentKinds, documentSchemas } from "./documents";
import { jsonSchemaOf, schemaFiles } from "./json-schema";
import { corpus } from "./schema-corpus.test-data";
import { HTTP_URL_PATTERN } from "./schemas/common";

const schemasDir = join(import.meta.dirname, "..", "..", "..", "schemas");

async function publishedValidators() {
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false });
  addFormats(ajv);
  const validators = new Map<DocumentKind, ReturnType<typeof ajv.compile>>();
  for (const kind of documentKinds) {
    const text = await readFile(join(schemasDir, `${kind}.schema.json`), "utf8");
    validators.set(kind, ajv.compile(JSON.parse(text)));
  }
  return validators;
}

const validators = await publishedValidators();

function verdicts(kind: DocumentKind, document: unknown) {
  const validate = validators.get(kind)!;
  const ajvOk = validate(document);
  const zodResult = documentSchemas[kind].safeParse(document);
  return {
    zod: zodResult.success,
    ajv: ajvOk,
    zodIssues: zodResult.success ? [] : zodResult.error.issues.map((issue) => issue.message),
    ajvErrors: (validate.errors ?? []).map((error) => `${error.instancePath} ${error.message}`),
  };
}

describe("published JSON Schemas", () => {
  it("are the ones the zod schemas generate", async () => {
    for (const kind of documentKinds) {
      const text = await readFile(join(schemasDir, `${kind}.schema.json`), "utf8");
      expect(JSON.parse(text), kind).toEqual(jsonSchemaOf(kind));
    }
  });

  it("are committed byte for byte as schemaFiles() renders them", async () => {
    const files = schemaFiles();
    expect([...files.keys()].sort()).toEqual(documentKinds.map((kind) => `${kind}.schema.json`).sort());
    for (const [name, text] of files) {
      expect(await readFile(join(schemasDir, name), "utf8"), name).toBe(text);
    }
  });

  it("ship inside the package under @gstack/contracts/schemas/*", async () => {
    const manifest = JSON.parse(await readFile(join(import.meta.dirname, "..", "package.json"), "utf8"));
    expect(manifest.exports["./schemas/*"]).toBe("./dist/schemas/*");
    expect(manifest.files).toContain("dist");
    expect(manifest.scripts.build).toContain("scripts/schemas.ts --out dist/schemas");
  });

  it("declare draft 2020-12 and an $id per kind", () => {
    for (const kind of documentKinds) {
      const schema = jsonSchemaOf(kind);
      expect(schema.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
      expect(schema.$id).toBe(`https://gstack.dev/schemas/${kind}.schema.json`);
    }
  });

  it("leave fields with defaults optional to writers", () => {
    const dispatch = jsonSchemaOf("dispatch") as { required: string[] };
    expect(dispatch.required).not.toContain("target_agent");
    const standing = jsonSchemaOf("standing-task") as { required: string[] };
    expect(standing.required).toEqual(["name", "scope"]);
  });

  it("have a corpus for every kind, with both verdicts", () => {
    for (const kind of documentKinds) {
      expect(Object.keys(corpus[kind].valid).length, kind).toBeGreaterThan(0);
      expect(Object.keys(corpus[kind].invalid).length, kind).toBeGreaterThan(0);
    }
  });
});

describe.each(documentKinds)("zod and JSON Schema agree on %s", (kind) => {
  const cases = [
    ...Object.entries(corpus[kind].valid).map(([name, document]) => ({ name, document, expected: true })),
    ...Object.entries(corpus[kind].invalid).map(([name, document]) => ({ name, document, expected: false })),
  ];
  it.each(cases)("$name", ({ name, document, expected }) => {
    const result = verdicts(kind, document);
    const label = `${kind} document "${name}" (zod: ${result.zodIssues.join("; ") || "ok"} | ajv: ${result.ajvErrors.join("; ") || "ok"})`;
    expect({ zod: result.zod, ajv: result.ajv }, label).toEqual({ zod: expected, ajv: expected });
  });
});

/** Values chosen to hit the rules: bounds, wrong types, unicode, formats. */
const interesting = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(
    0,
    -1,
    1,
    59,
    60,
    86_400,
    86_401,
    1.5,
    2 ** 53,
    "",
    "🔐",
    "..",
    "dispatch-x",
    "2026-04-03T14:30:00Z",
    "2026-02-30T00:00:00Z",
    "https://host.example/x",
    "ftp://host.example/x",
    "a".repeat(64),
    [],
    [""],
    ["x"],
    {},
    null,
    true,
  ),
);

describe("zod and JSON Schema agree on mutated documents", () => {
  it.each(documentKinds)("%s", (kind) => {
    const bases = Object.values(corpus[kind].valid).filter(
      (document): document is Record<string, unknown> =>
        typeof document === "object" && document !== null && !Array.isArray(document),
    );
    const fields = [
      ...new Set([
        ...bases.flatMap((document) => Object.keys(document)),
        ...Object.keys((jsonSchemaOf(kind).properties as Record<string, unknown>) ?? {}),
        "extra_field",
      ]),
    ];
    fc.assert(
      fc.property(
        fc.constantFrom(...bases),
        fc.array(fc.tuple(fc.constantFrom(...fields), fc.option(interesting, { nil: undefined })), {
          minLength: 1,
          maxLength: 3,
        }),
        (base, edits) => {
          const document: Record<string, unknown> = structuredClone(base);
          for (const [field, value] of edits) {
            if (value === undefined) delete document[field];
            else document[field] = value;
          }
          const result = verdicts(kind, document);
          expect(result.ajv, `${kind} ${JSON.stringify(document).slice(0, 300)}`).toBe(result.zod);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("HTTP_URL_PATTERN", () => {
  const host = fc.oneof(
    fc.domain().filter((domain) => /[A-Za-z]/.test(domain.split(".").pop() ?? "")),
    fc.ipV4(),
    fc.ipV6().map((address) => `[${address}]`),
  );
  const url = fc
    .tuple(
      fc.constantFrom("http", "https", "HTTP"),
      host,
      fc.option(fc.integer({ min: 0, max: 65_535 }), { nil: undefined }),
      fc.webPath(),
      fc.option(fc.webQueryParameters(), { nil: undefined }),
      fc.option(fc.webFragments(), { nil: undefined }),
    )
    .map(
      ([scheme, hostname, port, path, query, fragment]) =>
        `${scheme}://${hostname}${port === undefined ? "" : `:${port}`}${path}${query === undefined ? "" : `?${query}`}${fragment === undefined ? "" : `#${fragment}`}`,
    );

  it("accepts generated http(s) URLs, and everything it accepts parses as a WHATWG URL", () => {
    fc.assert(
      fc.property(url, (text) => {
        if (!HTTP_URL_PATTERN.test(text)) return;
        const parsed = new URL(text);
        expect(["http:", "https:"]).toContain(parsed.protocol);
      }),
      { numRuns: 500 },
    );
  });

  it("accepts the common shapes of generated URLs", () => {
    const accepted = fc.sample(url, 200).filter((text) => HTTP_URL_PATTERN.test(text)).length;
    expect(accepted).toBeGreaterThan(150);
  });
});

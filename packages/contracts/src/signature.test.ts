import { createHmac } from "node:crypto";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ContractError } from "./errors";
import {
  canonicalJson,
  readSecretFile,
  SIGNATURE_FIELD,
  signDocument,
  signedBytes,
  verifyDocument,
  withSignature,
} from "./signature";

const secret = "0123456789abcdef-local-secret";

const dispatch = {
  id: "dispatch-auth",
  dispatched_by: "wintermute",
  task: "Build the auth flow",
  project: "baku",
  project_dir: "~/git/baku",
  callback_url: "https://clawvisor.example/api/tasks/t1/complete",
  learnings: ["uses drizzle"],
  ttl_seconds: 3600,
};

/** Rebuilds an object with its keys in a shuffled order, recursively. */
function shuffleKeys(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((item, index) => shuffleKeys(item, seed + index));
  if (value === null || typeof value !== "object") return value;
  const entries = Object.entries(value as Record<string, unknown>);
  entries.sort((a, b) => ((a[0].length * 31 + seed) % 7) - ((b[0].length * 17 + seed) % 5));
  if (seed % 2 === 1) entries.reverse();
  return Object.fromEntries(entries.map(([key, item]) => [key, shuffleKeys(item, seed + 1)]));
}

describe("canonicalJson", () => {
  it("sorts keys, drops white space and writes numbers as ECMAScript does (RFC 8785)", () => {
    expect(canonicalJson({ b: 1, a: [true, null, "x"], c: { z: 1e21, y: 0.1, x: -0 } })).toBe(
      '{"a":[true,null,"x"],"b":1,"c":{"x":0,"y":0.1,"z":1e+21}}',
    );
  });

  it("orders keys by UTF-16 code units", () => {
    expect(canonicalJson({ "\u{1F600}": 1, "\uFB33": 2, a: 3, B: 4 })).toBe(
      '{"B":4,"a":3,"\u{1F600}":1,"\uFB33":2}',
    );
  });

  it("escapes strings the way JSON.stringify does", () => {
    expect(canonicalJson('line\nbreak "quoted" \u0007 é')).toBe('"line\\nbreak \\"quoted\\" \\u0007 é"');
  });

  it("refuses values JSON cannot hold", () => {
    expect(() => canonicalJson(Number.NaN)).toThrow(TypeError);
    expect(() => canonicalJson(Number.POSITIVE_INFINITY)).toThrow(TypeError);
    expect(() => canonicalJson(10n)).toThrow(TypeError);
  });

  it("gives equal bytes for equal values, whatever the key order", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.nat(), (value, seed) => {
        expect(canonicalJson(shuffleKeys(value, seed))).toBe(canonicalJson(value));
        expect(canonicalJson(JSON.parse(JSON.stringify(value)))).toBe(canonicalJson(value));
      }),
    );
  });

  it("is valid JSON that parses back to the same value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(canonicalJson(JSON.parse(canonicalJson(value)))).toBe(canonicalJson(value));
      }),
    );
  });
});

describe("dispatch signatures", () => {
  it("covers the canonical JSON of every field but the signature, as UTF-8", () => {
    const signed = withSignature(dispatch, secret);
    expect(signedBytes(signed).toString("utf8")).toBe(canonicalJson(dispatch));
    const expected = createHmac("sha256", secret)
      .update(Buffer.from(canonicalJson(dispatch), "utf8"))
      .digest("hex");
    expect(signed[SIGNATURE_FIELD]).toBe(expected);
    expect(signed[SIGNATURE_FIELD]).toMatch(/^[0-9a-f]{64}$/);
  });

  it("verifies a valid signature, whatever the key order", () => {
    const signed = withSignature(dispatch, secret);
    expect(verifyDocument(signed, secret)).toEqual({ ok: true });
    expect(verifyDocument(shuffleKeys(signed, 3) as Record<string, unknown>, secret)).toEqual({ ok: true });
    expect(verifyDocument(JSON.parse(JSON.stringify(signed)), Buffer.from(secret))).toEqual({ ok: true });
  });

  it("reports a missing or malformed signature", () => {
    expect(verifyDocument(dispatch, secret)).toEqual({ ok: false, reason: "missing" });
    for (const bad of ["", "abc", "A".repeat(64), "g".repeat(64), 42, null, ["x"]]) {
      expect(verifyDocument({ ...dispatch, [SIGNATURE_FIELD]: bad }, secret), String(bad)).toEqual({
        ok: false,
        reason: "malformed",
      });
    }
  });

  it("refuses a signature made with another secret", () => {
    const signed = withSignature(dispatch, "another-secret-of-some-length");
    expect(verifyDocument(signed, secret)).toEqual({ ok: false, reason: "mismatch" });
  });

  it("breaks when any field other than the signature is changed, added or removed", () => {
    const signed = withSignature(dispatch, secret);
    const fields = Object.keys(dispatch);
    const change = fc.oneof(
      fc.record({
        kind: fc.constant("change" as const),
        field: fc.constantFrom(...fields),
        value: fc.jsonValue(),
      }),
      fc.record({
        kind: fc.constant("add" as const),
        field: fc.string().filter((field) => !(field in signed)),
        value: fc.jsonValue(),
      }),
      fc.record({
        kind: fc.constant("remove" as const),
        field: fc.constantFrom(...fields),
        value: fc.constant(null),
      }),
    );
    fc.assert(
      fc.property(change, ({ kind, field, value }) => {
        const tampered: Record<string, unknown> = { ...signed };
        if (kind === "remove") delete tampered[field];
        else {
          if (kind === "change")
            fc.pre(canonicalJson(value) !== canonicalJson(signed[field as keyof typeof signed]));
          tampered[field] = value;
        }
        expect(verifyDocument(tampered, secret)).toEqual({ ok: false, reason: "mismatch" });
      }),
      { numRuns: 500 },
    );
  });

  it("breaks when a nested value changes", () => {
    const signed = withSignature(dispatch, secret);
    expect(verifyDocument({ ...signed, learnings: ["uses prisma"] }, secret).ok).toBe(false);
    expect(verifyDocument({ ...signed, project_dir: "~/git/baku/../../" }, secret).ok).toBe(false);
  });

  it("matches the worked example in COMPATIBILITY.md (checked with openssl dgst -hmac)", () => {
    const asWritten = {
      id: "dispatch-2026-04-03-auth-flow",
      dispatched_by: "wintermute",
      task: "Build JWT auth flow — with refresh rotation",
      project: "baku",
      project_dir: "~/git/baku",
      ttl_seconds: 3600,
      callback_url: "https://clawvisor.example/api/tasks/task_abc123/complete",
      source_signature: "1261d5b51640460362f9fac62bd4f0336a52eaec6f388120b40f056a57ce7692",
    };
    expect(signedBytes(asWritten).toString("utf8")).toBe(
      '{"callback_url":"https://clawvisor.example/api/tasks/task_abc123/complete","dispatched_by":"wintermute",' +
        '"id":"dispatch-2026-04-03-auth-flow","project":"baku","project_dir":"~/git/baku",' +
        '"task":"Build JWT auth flow — with refresh rotation","ttl_seconds":3600}',
    );
    expect(verifyDocument(asWritten, "correct-horse-battery-staple")).toEqual({ ok: true });
  });

  it("is stable: signing twice gives the same signature", () => {
    expect(signDocument(dispatch, secret)).toBe(signDocument(withSignature(dispatch, secret), secret));
  });
});

describe("readSecretFile", () => {
  let folder: string;
  beforeEach(async () => {
    folder = await mkdtemp(join(tmpdir(), "contracts-secret-"));
  });
  afterEach(async () => {
    await rm(folder, { recursive: true, force: true });
  });

  it("refuses a file others can read", async () => {
    const path = join(folder, ".dispatch-secret");
    await writeFile(path, "a-long-enough-secret-value\n");
    await chmod(path, 0o644);
    const error = await readSecretFile(path).catch((caught: unknown) => caught);
    expect(ContractError.isInstance(error)).toBe(true);
    expect((error as ContractError).issues[0]!.rule).toBe("permissions");
    expect((error as ContractError).message).toContain("mode 644");
    expect((error as ContractError).message).toContain(`chmod 600 ${path}`);
  });

  it("names the file when a folder stands in its place, whatever its mode", async () => {
    const path = join(folder, ".callback-secret");
    await mkdir(path, { mode: 0o700 });
    const error = await readSecretFile(path).catch((caught: unknown) => caught);
    expect(ContractError.isInstance(error)).toBe(true);
    expect((error as ContractError).message).toContain(path);
    expect((error as ContractError).message).toContain("is a folder");
  });

  it("refuses a group-writable file", async () => {
    const path = join(folder, ".dispatch-secret");
    await writeFile(path, "a-long-enough-secret-value\n");
    await chmod(path, 0o620);
    await expect(readSecretFile(path)).rejects.toThrow(/mode 620/);
  });

  it("reads a 0600 file, trimming the trailing newline", async () => {
    const path = join(folder, ".dispatch-secret");
    await writeFile(path, "a-long-enough-secret-value\n", { mode: 0o600 });
    await chmod(path, 0o600);
    await expect(readSecretFile(path)).resolves.toBe("a-long-enough-secret-value");
  });

  it("refuses a secret that is too short", async () => {
    const path = join(folder, ".dispatch-secret");
    await writeFile(path, "short\n", { mode: 0o600 });
    await chmod(path, 0o600);
    await expect(readSecretFile(path)).rejects.toThrow(/fewer than 16 characters/);
  });
});

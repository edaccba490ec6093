import { chmod, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Capability,
  checkCsrf,
  csrfToken,
  loadReviewKey,
  signCapability,
  verifyCapability,
} from "./capability";

const key = Buffer.alloc(32, 7);
const now = new Date("2026-11-27T08:00:00Z");
const nowSeconds = now.getTime() / 1000;

const capability = fc.record({
  dispatchId: fc.oneof(
    fc.constant("*"),
    fc.stringMatching(/^dispatch-\d{8}T\d{6}-[0-9a-f]{8}$/),
    fc.string({ minLength: 1 }).filter((text) => !text.includes("|")),
  ),
  expires: fc.integer({ min: nowSeconds + 1, max: nowSeconds + 10 * 365 * 86_400 }),
  scope: fc.constantFrom<Capability["scope"]>("dispatch", "list"),
});

describe("review capabilities", () => {
  it("a signed capability verifies to exactly what was signed", () => {
    fc.assert(
      fc.property(capability, (signed) => {
        const check = verifyCapability(key, signCapability(key, signed), now);
        expect(check).toEqual({ ok: true, capability: signed });
      }),
    );
  });

  it("any single changed character of a capability is refused", () => {
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=|%";
    fc.assert(
      fc.property(capability, fc.nat(), fc.constantFrom(...alphabet), (signed, at, replacement) => {
        const token = signCapability(key, signed);
        const index = at % token.length;
        fc.pre(token[index] !== replacement);
        const changed = `${token.slice(0, index)}${replacement}${token.slice(index + 1)}`;
        expect(verifyCapability(key, changed, now).ok).toBe(false);
      }),
    );
  });

  it("a capability signed with another key is forged", () => {
    fc.assert(
      fc.property(capability, fc.uint8Array({ minLength: 32, maxLength: 32 }), (signed, bytes) => {
        const other = Buffer.from(bytes);
        fc.pre(!other.equals(key));
        expect(verifyCapability(key, signCapability(other, signed), now)).toEqual({
          ok: false,
          reason: "forged",
        });
      }),
    );
  });

  it("an expired capability is refused, at the second it expires", () => {
    const token = signCapability(key, { dispatchId: "dispatch-1", expires: nowSeconds, scope: "dispatch" });
    expect(verifyCapability(key, token, now)).toEqual({ ok: false, reason: "expired" });
    expect(verifyCapability(key, token, new Date(now.getTime() - 1000)).ok).toBe(true);
  });

  it("missing and malformed capabilities are refused", () => {
    expect(verifyCapability(key, undefined, now)).toEqual({ ok: false, reason: "missing" });
    expect(verifyCapability(key, "", now)).toEqual({ ok: false, reason: "missing" });
    for (const bad of ["abc", "a.b.c", ".x", "x.", "a b.c", "%%.%%"])
      expect(verifyCapability(key, bad, now).ok).toBe(false);
  });

  it("the form token is bound to its capability", () => {
    fc.assert(
      fc.property(capability, capability, (one, two) => {
        const first = signCapability(key, one);
        const second = signCapability(key, two);
        expect(checkCsrf(key, first, csrfToken(key, first))).toBe(true);
        if (first !== second) expect(checkCsrf(key, second, csrfToken(key, first))).toBe(false);
        expect(checkCsrf(key, first, undefined)).toBe(false);
      }),
    );
  });
});

describe("the review key file", () => {
  let folder: string;
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), "gstack-review-key-"));
  });
  afterAll(async () => {
    await rm(folder, { recursive: true, force: true });
  });

  it("is made once with mode 0600 and read back the same", async () => {
    const path = join(folder, "made", "review.key");
    const made = await loadReviewKey(path);
    expect(made).toHaveLength(32);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await loadReviewKey(path)).equals(made)).toBe(true);
    expect((await readFile(path, "utf8")).trim()).toBe(made.toString("hex"));
  });

  it("a key file others can read is refused, not repaired", async () => {
    const path = join(folder, "loose.key");
    await writeFile(path, `${"ab".repeat(32)}\n`);
    await chmod(path, 0o644);
    await expect(loadReviewKey(path)).rejects.toThrow(
      /loose\.key is readable by others \(mode 644\).*chmod 600/,
    );
    expect((await stat(path)).mode & 0o777).toBe(0o644);
  });

  it("a key file that is not 64 hex digits is refused with its rule", async () => {
    const path = join(folder, "short.key");
    await writeFile(path, "abc\n", { mode: 0o600 });
    await expect(loadReviewKey(path)).rejects.toThrow(/short\.key: the review key must be 64 hex digits/);
  });
});

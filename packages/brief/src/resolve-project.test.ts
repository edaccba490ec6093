import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { matchProject, slugOfFolder, trustedFolders } from "./resolve-project";

const run = promisify(execFile);

describe("matchProject", () => {
  it("takes a known slug as said, in any case", () => {
    expect(matchProject("acme-baku", ["acme-baku", "other"])).toEqual({ ok: true, project: "acme-baku" });
    expect(matchProject("ACME-Baku", ["acme-baku"])).toEqual({ ok: true, project: "acme-baku" });
  });

  it("finds owner-repo from the repository's name, as people say it", () => {
    expect(matchProject("baku", ["acme-baku", "acme-widget"])).toEqual({ ok: true, project: "acme-baku" });
  });

  it("names every candidate when the name fits two projects", () => {
    expect(matchProject("baku", ["acme-baku", "fork-baku"])).toEqual({
      ok: false,
      reason: "ambiguous",
      candidates: ["acme-baku", "fork-baku"],
    });
  });

  it("finds a project by its trusted folder's name", () => {
    const folders = new Map([["/home/me/code/baku", "someone-baku-app"]]);
    expect(matchProject("baku", [], folders)).toEqual({ ok: true, project: "someone-baku-app" });
  });

  it("says unknown rather than guess", () => {
    expect(matchProject("nowhere", ["acme-baku"])).toEqual({ ok: false, reason: "unknown", name: "nowhere" });
  });

  it("only ever answers with a project it was given", () => {
    const slug = fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,12}$/);
    fc.assert(
      fc.property(slug, fc.array(slug, { maxLength: 8 }), (name, known) => {
        const match = matchProject(name, known);
        if (match.ok) expect(known).toContain(match.project);
        else if (match.reason === "ambiguous") {
          expect(match.candidates.length).toBeGreaterThan(1);
          for (const candidate of match.candidates) expect(known).toContain(candidate);
        } else {
          expect(known.some((item) => item === name || item.endsWith(`-${name}`))).toBe(false);
        }
      }),
    );
  });
});

describe("slugOfFolder", () => {
  let base: string;
  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), "brief-slug-"));
  });
  afterAll(async () => {
    await rm(base, { recursive: true, force: true });
  });

  it("reads gstack's owner-repo slug from the origin remote of a real repository", async () => {
    const repo = join(base, "checkout");
    await mkdir(repo);
    await run("git", ["init", "-q", repo]);
    await run("git", ["-C", repo, "remote", "add", "origin", "git@github.com:acme/baku.git"]);
    expect(await slugOfFolder(repo)).toBe("acme-baku");
    expect([...(await trustedFolders([repo, `${base}/*`])).entries()]).toEqual([[repo, "acme-baku"]]);
    // A trusted folder of checkouts: the repositories directly inside it.
    expect([...(await trustedFolders([base])).entries()]).toEqual([[repo, "acme-baku"]]);
  });

  it("falls back to the folder's name without a remote", async () => {
    const plain = join(base, "widget");
    await mkdir(plain);
    expect(await slugOfFolder(plain)).toBe("widget");
  });
});

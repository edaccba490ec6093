import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { allJsonSchemas } from "../src/json-schema";
import { cachedSchemasFromRegistry, decide, majorChangesetNames, readTarball } from "./compat-check";

const exec = promisify(execFile);
const script = join(import.meta.dirname, "compat.ts");

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "contracts-compat-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function git(...args: string[]) {
  await exec("git", ["-c", "user.name=Test", "-c", "user.email=test@example.com", ...args], { cwd: root });
}

type Schema = Record<string, unknown> & { properties: Record<string, unknown>; required: string[] };

function currentDispatch(): Schema {
  return structuredClone(allJsonSchemas().dispatch) as Schema;
}

async function writeSchemas(schemas: Record<string, unknown>) {
  await rm(join(root, "schemas"), { recursive: true, force: true });
  await mkdir(join(root, "schemas"), { recursive: true });
  for (const [kind, schema] of Object.entries(schemas)) {
    await writeFile(join(root, "schemas", `${kind}.schema.json`), `${JSON.stringify(schema, null, 2)}\n`);
  }
}

async function compat(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(
      process.execPath,
      ["--import", "tsx", script, "--root", root, ...args],
      {
        cwd: import.meta.dirname,
      },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failure = error as { code: number; stdout: string; stderr: string };
    return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr };
  }
}

/** A scratch repository with two releases; the newest (0.10.0) holds the current dispatch schema. */
async function repositoryWithReleases() {
  await git("init", "-q", "-b", "main");
  const old = currentDispatch();
  delete old.properties.files;
  await writeSchemas({ dispatch: old });
  await git("add", "-A");
  await git("commit", "-qm", "first release");
  await git("tag", "@gstack/contracts@0.9.0");
  await writeSchemas({ dispatch: currentDispatch(), heartbeat: allJsonSchemas().heartbeat });
  await git("add", "-A");
  await git("commit", "-qm", "second release");
  await git("tag", "@gstack/contracts@0.10.0");
}

describe("pnpm compat in a scratch repository", () => {
  it("passes when nothing changed since the newest tag (by version, not by name)", async () => {
    await repositoryWithReleases();
    const result = await compat("--no-registry");
    expect(result.stdout).toContain("comparing schemas/ with git tag @gstack/contracts@0.10.0");
    expect(result.stdout).toContain("no schema changes");
    expect(result.code).toBe(0);
  });

  it("passes an additive change and lists it", async () => {
    await repositoryWithReleases();
    const next = currentDispatch();
    next.properties.priority = { type: "string" };
    await writeSchemas({ dispatch: next, heartbeat: allJsonSchemas().heartbeat });
    const result = await compat("--no-registry");
    expect(result.stdout).toMatch(
      /additive\s+dispatch\.priority: new optional field \[optional-field-added\]/,
    );
    expect(result.code).toBe(0);
  });

  it("fails a breaking change without a major changeset, naming the field", async () => {
    await repositoryWithReleases();
    const next = currentDispatch();
    delete next.properties.task;
    next.required = next.required.filter((name) => name !== "task");
    await writeSchemas({ dispatch: next, heartbeat: allJsonSchemas().heartbeat });
    await mkdir(join(root, ".changeset"));
    await writeFile(join(root, ".changeset", "README.md"), "# Changesets\n");
    await writeFile(
      join(root, ".changeset", "small.md"),
      '---\n"@gstack/contracts": minor\n---\n\nA change.\n',
    );
    const result = await compat("--no-registry");
    expect(result.stdout).toMatch(/breaking\s+dispatch\.task: required field removed \[field-removed\]/);
    expect(result.stdout).toContain("1 breaking change(s) and no major changeset for @gstack/contracts");
    expect(result.code).toBe(1);
  });

  it("fails when a document kind disappears", async () => {
    await repositoryWithReleases();
    await writeSchemas({ dispatch: currentDispatch() });
    const result = await compat("--no-registry");
    expect(result.stdout).toContain("heartbeat: the document kind was removed [schema-removed]");
    expect(result.code).toBe(1);
  });

  it("passes a breaking change that comes with a major changeset", async () => {
    await repositoryWithReleases();
    const next = currentDispatch();
    next.properties.ttl_seconds = { type: "string" };
    await writeSchemas({ dispatch: next, heartbeat: allJsonSchemas().heartbeat });
    await mkdir(join(root, ".changeset"));
    await writeFile(
      join(root, ".changeset", "ttl-as-text.md"),
      "---\n'@gstack/contracts': major\n'@gstack/other': patch\n---\n\nttl_seconds is now text.\n",
    );
    const result = await compat("--no-registry");
    expect(result.stdout).toContain("covered by a major changeset (ttl-as-text.md)");
    expect(result.code).toBe(0);
  });

  it("passes without a tag when the registry cannot be reached, and says why", async () => {
    await git("init", "-q");
    await writeSchemas({ dispatch: currentDispatch() });
    const result = await compat("--registry", "http://127.0.0.1:9/");
    expect(result.stdout).toMatch(
      /^compat: no baseline to compare with \(no @gstack\/contracts@\* git tag, and http:\/\/127\.0\.0\.1:9\/ is not reachable/,
    );
    expect(result.code).toBe(0);
  });

  it("rejects an unknown option with one line and exit code 2", async () => {
    const result = await compat("--frobnicate");
    expect(result.stderr.trim()).toBe("compat: unknown option --frobnicate (see --help)");
    expect(result.code).toBe(2);
  });
});

describe("pnpm compat against a registry", () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((done) => (server ? server.close(done) : done(undefined)));
    server = undefined;
  });

  async function publish(schemas: Record<string, unknown>): Promise<string> {
    const packageDir = join(root, "published", "package");
    await mkdir(join(packageDir, "dist", "schemas"), { recursive: true });
    await writeFile(join(packageDir, "package.json"), '{"name":"@gstack/contracts","version":"1.2.3"}');
    for (const [kind, schema] of Object.entries(schemas)) {
      await writeFile(join(packageDir, "dist", "schemas", `${kind}.schema.json`), JSON.stringify(schema));
    }
    const tarball = join(root, "published", "contracts-1.2.3.tgz");
    await exec("tar", ["-czf", tarball, "-C", join(root, "published"), "package"]);
    const body = await readFile(tarball);
    server = createServer((request, response) => {
      const base = `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
      if (request.url === "/@gstack%2fcontracts") {
        response.setHeader("content-type", "application/json");
        response.end(
          JSON.stringify({
            name: "@gstack/contracts",
            "dist-tags": { latest: "1.2.3" },
            versions: { "1.2.3": { dist: { tarball: `${base}/contracts-1.2.3.tgz` } } },
          }),
        );
      } else if (request.url === "/contracts-1.2.3.tgz") {
        response.end(body);
      } else {
        response.statusCode = 404;
        response.end();
      }
    });
    await new Promise<void>((done) => server!.listen(0, "127.0.0.1", done));
    return `http://127.0.0.1:${(server!.address() as AddressInfo).port}/`;
  }

  it("uses the latest published package when there is no tag", async () => {
    await git("init", "-q");
    const registry = await publish({ dispatch: currentDispatch() });
    const next = currentDispatch();
    next.properties.id = { type: "string", pattern: "^task-" };
    await writeSchemas({ dispatch: next });
    const result = await compat("--registry", registry);
    expect(result.stdout).toContain("comparing schemas/ with npm @gstack/contracts@1.2.3");
    expect(result.stdout).toMatch(/breaking\s+dispatch\.id: pattern changed/);
    expect(result.code).toBe(1);
  });

  it("has no baseline when the package is not published", async () => {
    await git("init", "-q");
    const registry = await publish({});
    await writeSchemas({ dispatch: currentDispatch() });
    const result = await compat("--registry", `${registry}missing/`);
    expect(result.stdout).toContain("is not published on");
    expect(result.code).toBe(0);
  });
});

describe("pnpm compat --cache", () => {
  let server: Server | undefined;
  let asked = 0;
  afterEach(async () => {
    await new Promise((done) => (server ? server.close(done) : done(undefined)));
    server = undefined;
  });

  async function registryWithout(): Promise<string> {
    asked = 0;
    server = createServer((_request, response) => {
      asked++;
      response.statusCode = 404;
      response.end();
    });
    await new Promise<void>((done) => server!.listen(0, "127.0.0.1", done));
    return `http://127.0.0.1:${(server!.address() as AddressInfo).port}/`;
  }

  it("asks the registry once and gives the kept answer, with its age, on the next run", async () => {
    await git("init", "-q");
    await writeSchemas({ dispatch: currentDispatch() });
    const registry = await registryWithout();
    const cache = join(root, "cache");
    const first = await compat("--registry", registry, "--cache", cache);
    expect(first.stdout).toContain("is not published on");
    expect(asked).toBe(1);
    const second = await compat("--registry", registry, "--cache", cache);
    expect(second.stdout).toMatch(/is not published on .*\(asked \d+ min ago, kept in /);
    expect(second.code).toBe(0);
    expect(asked).toBe(1);
    const other = await compat("--registry", `${registry}other/`, "--cache", cache);
    expect(other.stdout).not.toContain("kept in");
    expect(asked).toBe(2);
  });

  it("asks again next time when the registry could not be reached", async () => {
    await git("init", "-q");
    await writeSchemas({ dispatch: currentDispatch() });
    const cache = join(root, "cache");
    const result = await compat("--registry", "http://127.0.0.1:9/", "--cache", cache);
    expect(result.stdout).toContain("is not reachable");
    await expect(readdir(cache).catch(() => [])).resolves.toEqual([]);
  });
});

describe("cachedSchemasFromRegistry", () => {
  it("keeps a baseline for the time given and asks again after it", async () => {
    let now = 1_000_000;
    let asks = 0;
    const ask = async () => {
      asks++;
      return { label: "npm @gstack/contracts@1.2.3", schemas: { dispatch: { type: "object" } } };
    };
    const cache = { dir: join(root, "cache"), maxAgeMs: 60_000, now: () => now };
    const first = await cachedSchemasFromRegistry("http://r/", "@gstack/contracts", cache, ask);
    expect(first).toEqual({
      label: "npm @gstack/contracts@1.2.3",
      schemas: { dispatch: { type: "object" } },
    });
    now += 60_000;
    const kept = await cachedSchemasFromRegistry("http://r/", "@gstack/contracts", cache, ask);
    expect(kept).toEqual({
      label: "npm @gstack/contracts@1.2.3 (asked 1 min ago)",
      schemas: { dispatch: { type: "object" } },
    });
    expect(asks).toBe(1);
    now += 1;
    await cachedSchemasFromRegistry("http://r/", "@gstack/contracts", cache, ask);
    expect(asks).toBe(2);
  });
});

describe("majorChangesetNames", () => {
  it("finds major bumps of the package only", () => {
    const files = [
      { name: "a.md", text: '---\n"@gstack/contracts": major\n---\n\nx\n' },
      { name: "b.md", text: "---\n'@gstack/contracts': minor\n---\n" },
      { name: "c.md", text: '---\n"@gstack/daemon": major\n---\n' },
      { name: "d.md", text: "no frontmatter" },
      { name: "e.md", text: "---\n: [broken\n---\n" },
      { name: "f.md", text: '---\r\n"@gstack/contracts": major\r\n---\r\n' },
    ];
    expect(majorChangesetNames(files)).toEqual(["a.md", "f.md"]);
  });
});

describe("decide", () => {
  const before = { dispatch: { type: "object", properties: { a: { type: "string" } } } };
  const after = { dispatch: { type: "object", properties: {} } };

  it("passes with no baseline", () => {
    expect(decide(undefined, after, [], "why").ok).toBe(true);
  });

  it("fails a breaking change unless a major changeset is pending", () => {
    expect(decide({ label: "t", schemas: before }, after, []).ok).toBe(false);
    expect(decide({ label: "t", schemas: before }, after, ["x.md"]).ok).toBe(true);
    expect(decide({ label: "t", schemas: after }, before, []).ok).toBe(true);
  });
});

describe("readTarball", () => {
  it("reads the files of a gzipped tar archive", async () => {
    await mkdir(join(root, "package", "deep"), { recursive: true });
    await writeFile(join(root, "package", "deep", "x.json"), '{"x":1}');
    const longName = `${"n".repeat(120)}.json`;
    await writeFile(join(root, "package", longName), "long");
    await exec("tar", ["-czf", join(root, "p.tgz"), "-C", root, "package"]);
    const files = readTarball(await readFile(join(root, "p.tgz")));
    expect(files.get("package/deep/x.json")?.toString()).toBe('{"x":1}');
    expect(files.get(`package/${longName}`)?.toString()).toBe("long");
  });
});

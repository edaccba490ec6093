import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appendJsonLines, appendLines, writeFileAtomic } from "./files";

const run = promisify(execFile);

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), "contracts-files-"));
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

describe("writeFileAtomic", () => {
  it("creates missing folders and writes the content", async () => {
    const path = join(folder, "a", "b", "state.json");
    await writeFileAtomic(path, '{"ok":true}\n');
    expect(await readFile(path, "utf8")).toBe('{"ok":true}\n');
  });

  it("replaces an existing file and leaves no temporary file behind", async () => {
    const path = join(folder, "state.json");
    await writeFile(path, "old");
    await writeFileAtomic(path, new TextEncoder().encode("new"));
    expect(await readFile(path, "utf8")).toBe("new");
    expect(await readdir(folder)).toEqual(["state.json"]);
  });

  it("applies the requested mode", async () => {
    const path = join(folder, ".token");
    await writeFileAtomic(path, "secret", { mode: 0o600 });
    expect((await stat(path)).mode & 0o777).toBe(0o600);
  });

  it("makes the missing folder of a private file private too, whatever the umask", async () => {
    const umask = process.umask(0o022);
    try {
      const path = join(folder, "private", "state.json");
      await writeFileAtomic(path, "{}", { mode: 0o600 });
      expect((await stat(join(folder, "private"))).mode & 0o777).toBe(0o700);
      expect((await stat(path)).mode & 0o777).toBe(0o600);
      await writeFileAtomic(join(folder, "shared", "notes.md"), "hi");
      expect((await stat(join(folder, "shared"))).mode & 0o777).toBe(0o755);
    } finally {
      process.umask(umask);
    }
  });

  it("cleans up its temporary file when the rename fails", async () => {
    const path = join(folder, "taken");
    await mkdir(join(path, "inside"), { recursive: true });
    await expect(writeFileAtomic(path, "x")).rejects.toThrow();
    expect(await readdir(folder)).toEqual(["taken"]);
  });

  it("keeps writes at once to one file apart: the result is one whole write, no temporary file left", async () => {
    const path = join(folder, "busy.json");
    const contents = Array.from({ length: 50 }, (_, index) => `write ${index}\n`.repeat(100 + index));
    await Promise.all(contents.map((content) => writeFileAtomic(path, content)));
    expect(contents).toContain(await readFile(path, "utf8"));
    expect(await readdir(folder)).toEqual(["busy.json"]);
  });

  it("never shows a reader a partly written file", async () => {
    const path = join(folder, "big.json");
    const versions = ["a", "b", "c", "d"].map((letter) => letter.repeat(256 * 1024));
    await writeFileAtomic(path, versions[0]!);
    const seen = new Set<string>();
    let writing = true;
    const reader = (async () => {
      while (writing) seen.add(await readFile(path, "utf8"));
    })();
    for (let round = 0; round < 10; round++) await writeFileAtomic(path, versions[round % versions.length]!);
    writing = false;
    await reader;
    for (const content of seen) expect(versions).toContain(content);
  });
});

describe("appendLines", () => {
  it("appends each line with a newline", async () => {
    const path = join(folder, "log", "audit.jsonl");
    await appendLines(path, ["one", "two"]);
    await appendLines(path, []);
    await appendJsonLines(path, [{ n: 3 }]);
    expect(await readFile(path, "utf8")).toBe('one\ntwo\n{"n":3}\n');
  });

  it("refuses a line holding a newline, writing nothing", async () => {
    const path = join(folder, "audit.jsonl");
    await expect(appendLines(path, ["fine", "not\nfine"])).rejects.toThrow(TypeError);
    await expect(readFile(path, "utf8")).rejects.toThrow(/ENOENT/);
  });

  it("never tears or interleaves lines written by many processes at once", async () => {
    const path = join(folder, "shared.jsonl");
    const writers = 20;
    const perWriter = 150;
    const script = join(folder, "writer.mts");
    await writeFile(
      script,
      [
        `import { appendJsonLines } from ${JSON.stringify(join(import.meta.dirname, "files.ts"))};`,
        "const [path, writer, count] = process.argv.slice(2);",
        "let sequence = 0;",
        "while (sequence < Number(count)) {",
        "  const batch = [];",
        "  const size = 1 + (sequence % 4);",
        "  for (let i = 0; i < size && sequence < Number(count); i++, sequence++) {",
        "    batch.push({ writer: Number(writer), sequence, pad: 'x'.repeat((sequence * 97 + Number(writer) * 31) % 900) });",
        "  }",
        "  await appendJsonLines(path, batch);",
        "}",
      ].join("\n"),
    );
    await Promise.all(
      Array.from({ length: writers }, (_, writer) =>
        run(process.execPath, ["--import", "tsx", script, path, String(writer), String(perWriter)], {
          cwd: import.meta.dirname,
        }),
      ),
    );
    const text = await readFile(path, "utf8");
    expect(text.endsWith("\n")).toBe(true);
    const lines = text.slice(0, -1).split("\n");
    expect(lines).toHaveLength(writers * perWriter);
    const next = new Map<number, number>();
    for (const line of lines) {
      const entry = JSON.parse(line) as { writer: number; sequence: number; pad: string };
      expect(entry.sequence).toBe(next.get(entry.writer) ?? 0);
      expect(entry.pad).toBe("x".repeat((entry.sequence * 97 + entry.writer * 31) % 900));
      next.set(entry.writer, entry.sequence + 1);
    }
    expect([...next.values()]).toEqual(Array.from({ length: writers }, () => perWriter));
  }, 120_000);
});

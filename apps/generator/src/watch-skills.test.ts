import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fixtureSkillsDir } from "./__fixtures__/fixtures";
import { generateToFolder } from "./generate";
import { type SkillWatcher, type WatchResult, watchSkills } from "./watch-skills";

let root: string;
let watcher: SkillWatcher | undefined;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "gstack-generator-watch-"));
});
afterEach(async () => {
  await watcher?.close();
  watcher = undefined;
  await rm(root, { recursive: true, force: true });
});

describe("watchSkills", () => {
  it("regenerates a skill when its SKILL.md changes on disk, rewriting only that skill", async () => {
    const input = join(root, "gstack");
    const output = join(root, "openclaw");
    await cp(fixtureSkillsDir, input, { recursive: true });
    await generateToFolder({ input, output });

    const results: WatchResult[] = [];
    const errors: unknown[] = [];
    let notify: () => void = () => {};
    const next = () => new Promise<void>((resolve) => (notify = resolve));
    watcher = watchSkills({
      input,
      output,
      onResult: (result) => {
        results.push(result);
        notify();
      },
      onError: (error) => errors.push(error),
    });
    await watcher.ready;

    const regenerated = next();
    const source = await readFile(join(input, "qa/SKILL.md"), "utf8");
    await writeFile(
      join(input, "qa/SKILL.md"),
      source.replace("## Step 3: Fix", "## Step 3: Fix what is safe"),
    );
    await regenerated;

    expect(errors).toEqual([]);
    expect(results[0]?.changed).toEqual([join(input, "qa/SKILL.md")]);
    expect(results[0]?.written).toEqual(["skills/gstack-qa/SKILL.md"]);
    expect(await readFile(join(output, "skills/gstack-qa/SKILL.md"), "utf8")).toContain(
      "## Step 3: Fix what is safe",
    );
  });

  it("reports a broken skill through onError and recovers on the next save", async () => {
    const input = join(root, "gstack");
    const output = join(root, "openclaw");
    await cp(fixtureSkillsDir, input, { recursive: true });
    const errors: unknown[] = [];
    const results: WatchResult[] = [];
    let notify: () => void = () => {};
    const next = () => new Promise<void>((resolve) => (notify = resolve));
    watcher = watchSkills({
      input,
      output,
      onResult: (result) => {
        results.push(result);
        notify();
      },
      onError: (error) => {
        errors.push(error);
        notify();
      },
    });
    await watcher.ready;

    const failed = next();
    await writeFile(join(input, "ship/SKILL.md"), "---\nname: ship\ndescription: [broken\n---\n");
    await failed;
    expect(String(errors[0])).toContain("ship/SKILL.md");

    const recovered = next();
    await writeFile(join(input, "ship/SKILL.md"), "---\nname: ship\ndescription: Ship it.\n---\n\nBody.\n");
    await recovered;
    expect(await readFile(join(output, "skills/gstack-ship/SKILL.md"), "utf8")).toContain(
      'description: "Ship it."',
    );
  });
});

import { parseArgs } from "citty";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { status } from "./status";
import { quickStatusArgs } from "./status-quick";

/** What the status command itself makes of a command line, in the quick start's terms. */
async function commandArgs(rawArgs: string[]) {
  const args = await status.args;
  if (!args || typeof args === "function") throw new Error("the status command declares its arguments");
  const parsed = parseArgs(rawArgs, args) as { root?: unknown; id?: unknown; json?: unknown };
  return {
    ...(parsed.root !== undefined ? { root: parsed.root } : {}),
    ...(parsed.id !== undefined ? { id: parsed.id } : {}),
    ...(parsed.json ? { json: true } : {}),
  };
}

describe("the quick start of a plain status", () => {
  it("takes the plain forms and leaves everything else to the command", () => {
    expect(quickStatusArgs([])).toEqual({});
    expect(quickStatusArgs(["--json", "--root", "/r"])).toEqual({ json: true, root: "/r" });
    expect(quickStatusArgs(["dispatch-a", "--root=/r"])).toEqual({ id: "dispatch-a", root: "/r" });
    for (const other of [
      ["--help"],
      ["-h"],
      ["--root"],
      ["--no-json"],
      ["a", "b"],
      ["--root", "--json"],
      ["-x"],
    ]) {
      expect(quickStatusArgs(other)).toBeUndefined();
    }
  });

  it("reads every command line it takes as the status command does", async () => {
    const word = fc.constantFrom(
      "--root",
      "--root=/r",
      "--root=",
      "/state",
      "--json",
      "--no-json",
      "--json=false",
      "dispatch-a",
      "-",
      "--",
      "--help",
      "-h",
      "-j",
      "--id",
      "",
    );
    await fc.assert(
      fc.asyncProperty(fc.array(word, { maxLength: 5 }), async (rawArgs) => {
        const quick = quickStatusArgs(rawArgs);
        if (quick !== undefined) expect(quick).toEqual(await commandArgs(rawArgs));
      }),
      { numRuns: 2000 },
    );
  });
});

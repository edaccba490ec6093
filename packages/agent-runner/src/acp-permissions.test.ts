import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type AcpPermissionRequest, commandMatches, commandParts, decidePermission } from "./acp-permissions";
import { defaultAllowedTools } from "./tool-permissions";

const options = [
  { optionId: "always", kind: "allow_always" },
  { optionId: "once", kind: "allow_once" },
  { optionId: "no", kind: "reject_once" },
];
const policy = { cwd: "/work/project", allowedTools: defaultAllowedTools, disallowedTools: ["Bash(curl:*)"] };

function request(toolCall: AcpPermissionRequest["toolCall"]): AcpPermissionRequest {
  return { toolCall, options };
}

describe("decidePermission", () => {
  it("allows a granted command once, never always", () => {
    const decision = decidePermission(
      request({ kind: "execute", rawInput: { command: "git commit -m x" } }),
      policy,
    );
    expect(decision).toMatchObject({ allow: true, optionId: "once" });
  });

  it("refuses a command matching a refused pattern, naming the pattern", () => {
    const decision = decidePermission(request({ rawInput: { command: "curl -s https://x" } }), policy);
    expect(decision).toMatchObject({ allow: false, optionId: "no" });
    expect(decision.reason).toContain("Bash(curl:*)");
  });

  it("refuses a line whose later part is not granted", () => {
    const decision = decidePermission(request({ rawInput: { command: "git status; rm -rf ~" } }), policy);
    expect(decision.allow).toBe(false);
    expect(decision.reason).toContain("rm -rf ~");
  });

  it("allows edits inside the working directory and refuses them outside", () => {
    const inside = request({ kind: "edit", rawInput: { file_path: "src/a.ts", content: "" } });
    const outside = request({ kind: "edit", rawInput: { file_path: "/etc/passwd", content: "" } });
    expect(decidePermission(inside, policy).allow).toBe(true);
    expect(decidePermission(outside, policy)).toMatchObject({ allow: false });
    expect(decidePermission(outside, policy).reason).toContain("outside the working directory");
  });

  it("in plan mode refuses edits and commands but allows reading", () => {
    const plan = { ...policy, planOnly: true };
    expect(
      decidePermission(request({ kind: "edit", rawInput: { file_path: "a", content: "" } }), plan).allow,
    ).toBe(false);
    expect(decidePermission(request({ rawInput: { command: "git status" } }), plan).allow).toBe(false);
    expect(decidePermission(request({ kind: "read", rawInput: { file_path: "a" } }), plan).allow).toBe(true);
  });

  it("refuses when the agent offers only 'allow always'", () => {
    const decision = decidePermission(
      {
        toolCall: { kind: "execute", rawInput: { command: "git status" } },
        options: [options[0]!, options[2]!],
      },
      policy,
    );
    expect(decision).toMatchObject({ allow: false, optionId: "no" });
  });

  it("refuses fetching and unknown tools", () => {
    expect(decidePermission(request({ kind: "fetch", title: "Fetch x" }), policy).allow).toBe(false);
    expect(decidePermission(request({ kind: "other", title: "mystery" }), policy).allow).toBe(false);
  });

  it("never answers 'allow always', whatever is asked", () => {
    const kinds = fc.constantFrom(
      "read",
      "edit",
      "delete",
      "move",
      "search",
      "execute",
      "think",
      "fetch",
      "other",
    );
    fc.assert(
      fc.property(kinds, fc.string(), fc.boolean(), (kind, text, planOnly) => {
        const decision = decidePermission(
          request({ kind, title: text, rawInput: { command: text, file_path: text } }),
          { ...policy, planOnly },
        );
        expect(decision.optionId).not.toBe("always");
        expect(decision.allow).toBe(decision.optionId === "once");
      }),
    );
  });
});

describe("commandParts and commandMatches", () => {
  it("splits a line at its separators and keeps quoted ones", () => {
    expect(commandParts("git add a && git commit -m 'a && b' | cat; echo \"x;y\"")).toEqual([
      "git add a",
      "git commit -m 'a && b'",
      "cat",
      'echo "x;y"',
    ]);
  });

  it("gives back the commands a line was joined from", () => {
    const word = fc.stringMatching(/^[a-z0-9._/-]{1,8}$/);
    const simple = fc.array(word, { minLength: 1, maxLength: 4 }).map((words) => words.join(" "));
    const separator = fc.constantFrom(" && ", " || ", "; ", " | ", "\n");
    fc.assert(
      fc.property(fc.array(fc.tuple(simple, separator), { minLength: 1, maxLength: 5 }), (pieces) => {
        const line = pieces
          .map(([command, joiner], index) => (index === 0 ? command : `${joiner}${command}`))
          .join("");
        expect(commandParts(line)).toEqual(pieces.map(([command]) => command));
      }),
    );
  });

  it("reads `prefix:*` as the prefix and a word boundary", () => {
    expect(commandMatches("git commit:*", "git commit -m x")).toBe(true);
    expect(commandMatches("git commit:*", "git commit")).toBe(true);
    expect(commandMatches("git commit:*", "git commitx")).toBe(false);
    expect(commandMatches("curl *", "curl https://x")).toBe(true);
  });
});

import { describe, expect, it } from "vitest";
import { GeneratorError } from "./generator-error";
import { MAX_TEMPLATE_PASSES, resolveTemplate } from "./resolve-template";

const file = "ship/SKILL.md.tmpl";

describe("resolveTemplate", () => {
  it("expands names and arguments, including placeholders that resolvers produce", () => {
    const text = resolveTemplate("A {{GREETING}}\nB {{SECTION:intro:short}}\n", {
      file,
      skill: "ship",
      resolvers: {
        GREETING: ({ skill }) => `hello from ${skill} {{INNER}}`,
        INNER: () => "(inner)",
        SECTION: ({ args }) => args.join("+"),
      },
    });
    expect(text).toBe("A hello from ship (inner)\nB intro+short\n");
  });

  it("names the file and line of an unknown placeholder", () => {
    try {
      resolveTemplate("line one\nline two {{MISSING}}\n", {
        file,
        skill: "ship",
        resolvers: { KNOWN: () => "" },
      });
      expect.unreachable();
    } catch (error) {
      expect(GeneratorError.isInstance(error)).toBe(true);
      expect((error as GeneratorError).line).toBe(2);
      expect((error as Error).message).toMatch(
        /^ship\/SKILL\.md\.tmpl:2: unknown placeholder \{\{MISSING\}\}/,
      );
    }
  });

  it("stops after six passes and reports the placeholder still left", () => {
    const resolvers = { LOOP: () => "{{LOOP}}" };
    expect(() => resolveTemplate("x\n{{LOOP}}", { file, skill: "ship", resolvers })).toThrow(
      /ship\/SKILL\.md\.tmpl:2: placeholder \{\{LOOP\}\} is still present after 6 passes/,
    );
  });

  it("accepts a chain exactly six passes deep", () => {
    const resolvers = Object.fromEntries(
      Array.from({ length: MAX_TEMPLATE_PASSES }, (_, index) => [
        `STEP${index}`,
        () => (index + 1 < MAX_TEMPLATE_PASSES ? `{{STEP${index + 1}}}` : "end"),
      ]),
    );
    expect(resolveTemplate("{{STEP0}}", { file, skill: "ship", resolvers })).toBe("end");
  });

  it("reports a malformed placeholder and leaves other braces alone", () => {
    expect(() => resolveTemplate("a {{BAD-NAME}}", { file, skill: "s", resolvers: {} })).toThrow(
      /malformed placeholder/,
    );
    expect(resolveTemplate("helm {{ .Values.x }} and {{lower}}", { file, skill: "s", resolvers: {} })).toBe(
      "helm {{ .Values.x }} and {{lower}}",
    );
  });
});

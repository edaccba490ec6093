import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatPublishPlan, isClawHubSlug, publishPlan } from "./clawhub";
import { openClawSkillName } from "./skill-names";

describe("ClawHub slugs", () => {
  it.each([
    ["gstack", true],
    ["gstack-ship", true],
    ["a1b", true],
    ["ab", false],
    ["-gstack", false],
    ["gstack-", false],
    ["gstack--ship", false],
    ["Gstack", false],
    ["g_stack", false],
    ["a".repeat(96), true],
    ["a".repeat(97), false],
  ])("%s is %s", (slug, valid) => {
    expect(isClawHubSlug(slug)).toBe(valid);
  });

  it("accepts the name of every skill the generator can produce", () => {
    const word = fc.stringMatching(/^[a-z0-9]{1,8}$/);
    fc.assert(
      fc.property(fc.array(word, { minLength: 1, maxLength: 5 }), (words) => {
        const name = openClawSkillName(words.join("-"));
        expect(isClawHubSlug(name)).toBe(true);
      }),
    );
  });
});

describe("publishPlan", () => {
  it("publishes members by name and the meta-package last, all under one version", () => {
    const plan = publishPlan({
      skills: ["gstack-ship", "gstack", "gstack-qa", "gstack-qa"],
      metaPackage: "gstack",
      gstackVersion: "1.68.3.12",
      version: "1.68.3012",
    });
    expect(plan.steps.map((step) => step.slug)).toEqual(["gstack-qa", "gstack-ship", "gstack"]);
    expect(plan.steps[0]?.command).toEqual([
      "clawhub",
      "skill",
      "publish",
      "skills/gstack-qa",
      "--version",
      "1.68.3012",
    ]);
    expect(formatPublishPlan(plan)).toBe(
      "clawhub skill publish skills/gstack-qa --version 1.68.3012\n" +
        "clawhub skill publish skills/gstack-ship --version 1.68.3012\n" +
        "clawhub skill publish skills/gstack --version 1.68.3012\n",
    );
  });

  it("refuses an invalid slug before anything is published", () => {
    expect(() =>
      publishPlan({
        skills: ["gstack--bad"],
        metaPackage: "gstack",
        gstackVersion: "1.0.0.0",
        version: "1.0.0",
      }),
    ).toThrow(/"gstack--bad" is not a valid ClawHub slug/);
  });
});

import { join, resolve } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ContractError } from "./errors";
import {
  assertSafeName,
  branchFileName,
  childPath,
  expandHome,
  gstackLayout,
  isoWeekOf,
  isSafeName,
  openClawLayout,
  parseIsoWeek,
  projectSlug,
  resolveGstackHome,
  resolveOpenClawWorkspace,
  slugFromRemote,
} from "./layout";

const HOME = "/home/ada";

describe("resolveGstackHome", () => {
  it("prefers GSTACK_HOME, then CLAUDE_PLUGIN_DATA, then ~/.gstack", () => {
    expect(resolveGstackHome({ HOME, GSTACK_HOME: "/srv/g", CLAUDE_PLUGIN_DATA: "/p" })).toBe("/srv/g");
    expect(resolveGstackHome({ HOME, CLAUDE_PLUGIN_DATA: "/plugin/data" })).toBe("/plugin/data");
    expect(resolveGstackHome({ HOME })).toBe("/home/ada/.gstack");
  });

  it("ignores empty variables and expands ~", () => {
    expect(resolveGstackHome({ HOME, GSTACK_HOME: "", CLAUDE_PLUGIN_DATA: "~/data" })).toBe("/home/ada/data");
    expect(resolveGstackHome({ HOME, GSTACK_HOME: "~/state" })).toBe("/home/ada/state");
  });

  it("makes a relative GSTACK_HOME absolute", () => {
    expect(resolveGstackHome({ HOME, GSTACK_HOME: "state" })).toBe(resolve("state"));
  });
});

describe("resolveOpenClawWorkspace", () => {
  it("prefers OPENCLAW_WORKSPACE_DIR, then OPENCLAW_PROFILE, then ~/.openclaw/workspace", () => {
    expect(resolveOpenClawWorkspace({ HOME, OPENCLAW_WORKSPACE_DIR: "/w", OPENCLAW_PROFILE: "work" })).toBe(
      "/w",
    );
    expect(resolveOpenClawWorkspace({ HOME, OPENCLAW_PROFILE: "work" })).toBe(
      "/home/ada/.openclaw-work/workspace",
    );
    expect(resolveOpenClawWorkspace({ HOME })).toBe("/home/ada/.openclaw/workspace");
  });

  it("refuses a profile name that would leave the home folder", () => {
    expect(() => resolveOpenClawWorkspace({ HOME, OPENCLAW_PROFILE: "../../etc" })).toThrow(ContractError);
  });
});

describe("expandHome", () => {
  it("expands only a leading ~", () => {
    expect(expandHome("~", { HOME })).toBe(HOME);
    expect(expandHome("~/git/baku", { HOME })).toBe("/home/ada/git/baku");
    expect(expandHome("/x/~/y", { HOME })).toBe("/x/~/y");
    expect(expandHome("~other/x", { HOME })).toBe("~other/x");
  });
});

describe("projectSlug (field notes §1)", () => {
  it("uses GSTACK_PROJECT_SLUG first, keeping only allowed characters", () => {
    expect(
      projectSlug({
        folder: "/x/y",
        originUrl: "git@github.com:a/b.git",
        env: { GSTACK_PROJECT_SLUG: "my proj!" },
      }),
    ).toBe("myproj");
  });

  it("takes owner-repo from the origin remote", () => {
    for (const url of [
      "git@github.com:acme/widget.git",
      "https://github.com/acme/widget.git",
      "https://github.com/acme/widget",
      "https://github.com/acme/widget.git/",
      "ssh://git@git.example.com:2222/acme/widget.git",
      "https://gitlab.example.com/group/acme/widget.git",
    ]) {
      expect(projectSlug({ folder: "/src/other", originUrl: url }), url).toBe("acme-widget");
    }
  });

  it("falls back to the folder name without a remote", () => {
    expect(projectSlug({ folder: "/home/ada/git/baku" })).toBe("baku");
    expect(projectSlug({ folder: "/home/ada/git/my app (2)/" })).toBe("myapp2");
  });

  it("ignores a slug variable that sanitizes to nothing usable", () => {
    expect(projectSlug({ folder: "/src/baku", env: { GSTACK_PROJECT_SLUG: "//" } })).toBe("baku");
    expect(projectSlug({ folder: "/src/baku", env: { GSTACK_PROJECT_SLUG: ".." } })).toBe("baku");
  });

  it("always returns a safe file name", () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.option(fc.string(), { nil: undefined }),
        fc.string(),
        (folder, originUrl, slug) => {
          const result = projectSlug({ folder, originUrl, env: { GSTACK_PROJECT_SLUG: slug } });
          expect(isSafeName(result)).toBe(true);
        },
      ),
    );
  });

  it("turns a branch into a file-name part", () => {
    expect(branchFileName("garrytan/auth-flow")).toBe("garrytan-auth-flow");
    expect(slugFromRemote("nothing")).toBeUndefined();
  });
});

/** An independent ISO week: week 1 is the week holding 4 January. */
function referenceIsoWeek(date: Date): string {
  const day = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate());
  const mondayOfWeekOne = (year: number) => {
    const january4 = Date.UTC(year, 0, 4);
    const weekday = (new Date(january4).getUTCDay() + 6) % 7;
    return january4 - weekday * 86_400_000;
  };
  let year = date.getUTCFullYear();
  if (day >= mondayOfWeekOne(year + 1)) year += 1;
  else if (day < mondayOfWeekOne(year)) year -= 1;
  const week = Math.floor((day - mondayOfWeekOne(year)) / (7 * 86_400_000)) + 1;
  return `${year}-W${String(week).padStart(2, "0")}`;
}

describe("isoWeekOf", () => {
  it("handles the year boundaries", () => {
    expect(isoWeekOf(new Date("2026-12-31T12:00:00Z"))).toBe("2026-W53");
    expect(isoWeekOf(new Date("2027-01-01T00:00:00Z"))).toBe("2026-W53");
    expect(isoWeekOf(new Date("2027-01-04T00:00:00Z"))).toBe("2027-W01");
    expect(isoWeekOf(new Date("2024-12-30T00:00:00Z"))).toBe("2025-W01");
    expect(isoWeekOf(new Date("2026-04-03T14:30:00Z"))).toBe("2026-W14");
  });

  it("uses the UTC day", () => {
    expect(isoWeekOf(new Date("2027-01-03T23:59:59Z"))).toBe("2026-W53");
    expect(isoWeekOf(new Date("2027-01-03T23:59:59-05:00"))).toBe("2027-W01");
  });

  it("agrees with an independent computation", () => {
    fc.assert(
      fc.property(
        fc.date({
          min: new Date("1970-01-01T00:00:00Z"),
          max: new Date("2999-12-31T23:59:59Z"),
          noInvalidDate: true,
        }),
        (date) => {
          expect(isoWeekOf(date)).toBe(referenceIsoWeek(date));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("produces labels parseIsoWeek accepts", () => {
    fc.assert(
      fc.property(
        fc.date({ min: new Date("1970-01-01"), max: new Date("2999-12-31"), noInvalidDate: true }),
        (date) => {
          const label = isoWeekOf(date);
          expect(parseIsoWeek(label)).toEqual({
            year: Number(label.slice(0, 4)),
            week: Number(label.slice(6)),
          });
        },
      ),
    );
  });
});

describe("parseIsoWeek", () => {
  it("accepts week 53 only in years that have one", () => {
    expect(parseIsoWeek("2026-W53")).toEqual({ year: 2026, week: 53 });
    expect(() => parseIsoWeek("2025-W53")).toThrow(ContractError);
  });

  it("refuses malformed labels", () => {
    for (const label of ["2026-W00", "2026-W54", "2026-W1", "26-W01", "2026W01", "2026-W01/../x"]) {
      expect(() => parseIsoWeek(label), label).toThrow(ContractError);
    }
  });
});

describe("childPath and assertSafeName", () => {
  it("joins a safe name", () => {
    expect(childPath("/state/handoff", "handoff-1", ".md")).toBe(join("/state/handoff", "handoff-1.md"));
  });

  it("refuses traversal and separators", () => {
    for (const name of ["..", ".", "../x", "x/..", "a/b", "a\\b", "/etc/passwd", "", "x\0", "~", "a b"]) {
      expect(() => childPath("/state/handoff", name, ".md"), JSON.stringify(name)).toThrow(ContractError);
    }
  });

  it("names the rule and the value in the error", () => {
    try {
      assertSafeName("../../etc", "dispatch id");
      expect.unreachable();
    } catch (error) {
      const contractError = error as ContractError;
      expect(contractError.source).toBe("dispatch id");
      expect(contractError.issues[0]!.rule).toBe("safe-name");
      expect(contractError.message).toContain('"../../etc"');
    }
  });

  it("never yields a path outside the folder, whatever the name", () => {
    const folder = "/state/projects";
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.constantFrom("..", ".", "..%2f", "a/../..")), (name) => {
        let path: string;
        try {
          path = childPath(folder, name);
        } catch (error) {
          expect(ContractError.isInstance(error)).toBe(true);
          return;
        }
        expect(resolve(path).startsWith(`${folder}/`)).toBe(true);
      }),
    );
  });
});

describe("layouts", () => {
  it("puts every gstack path under the root", () => {
    const layout = gstackLayout("/g");
    expect(layout.config).toBe("/g/config.yaml");
    expect(layout.dispatch.incoming).toBe("/g/dispatch");
    expect(layout.dispatch.claimedFile("dispatch-a")).toBe("/g/dispatch/claimed/dispatch-a.json");
    expect(layout.dispatch.heartbeat).toBe("/g/dispatch/.daemon-heartbeat");
    expect(layout.activity.week("2026-W14")).toBe("/g/activity/activity-2026-W14.jsonl");
    expect(layout.project("baku").learnings).toBe("/g/projects/baku/learnings.jsonl");
    expect(layout.handoff.file("h-1")).toBe("/g/handoff/h-1.md");
  });

  it("refuses unsafe ids and weeks", () => {
    const layout = gstackLayout("/g");
    expect(() => layout.dispatch.sessionDir("../x")).toThrow(ContractError);
    expect(() => layout.project("..")).toThrow(ContractError);
    expect(() => layout.activity.week("../../x")).toThrow(ContractError);
  });

  it("puts OpenClaw paths in the workspace", () => {
    const layout = openClawLayout("/w");
    expect(layout.memoryIndex).toBe("/w/MEMORY.md");
    expect(layout.gstackMemory("baku")).toBe("/w/memory/gstack-baku.md");
    expect(() => layout.gstackMemory("../x")).toThrow(ContractError);
    expect(layout.skill("gstack-bridge")).toBe("/w/skills/gstack-bridge");
  });
});

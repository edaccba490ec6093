import { describe, expect, it } from "vitest";
import { resolveDispatchSettings } from "./config";
import { ContractError } from "./errors";
import { parseYaml } from "./parse";

function settingsOf(yaml: string) {
  return resolveDispatchSettings(parseYaml("daemon-config", yaml, { source: "config.yaml" }), {
    source: "config.yaml",
  });
}

describe("resolveDispatchSettings", () => {
  it("applies the defaults when nothing is set", () => {
    const { settings, conflicts } = settingsOf("telemetry: off\n");
    expect(settings).toMatchObject({
      max_concurrent: 2,
      trusted_repos: [],
      session_timeout_seconds: 3600,
      heartbeat_seconds: 30,
      shutdown_grace_seconds: 300,
    });
    expect(conflicts).toEqual([]);
  });

  it("reads gstack's flat keys, converting their string forms", () => {
    const { settings } = settingsOf(
      [
        'dispatch_max_concurrent: "4"',
        "dispatch_trusted_repos: ~/git/baku, ~/git/gstack ,",
        "dispatch_require_signature: 'false'",
        "dispatch_clawvisor_url: https://clawvisor.example/api",
        "dispatch_allowed_tools: [Bash(git commit:*)]",
      ].join("\n"),
    );
    expect(settings.max_concurrent).toBe(4);
    expect(settings.trusted_repos).toEqual(["~/git/baku", "~/git/gstack"]);
    expect(settings.require_signature).toBe(false);
    expect(settings.clawvisor_url).toBe("https://clawvisor.example/api");
    expect(settings.allowed_tools).toEqual(["Bash(git commit:*)"]);
  });

  it("reads the default spend cap flat, as gstack-config writes it, or nested", () => {
    expect(settingsOf('dispatch_default_budget_usd: "2.50"\n').settings.default_budget_usd).toBe(2.5);
    expect(settingsOf("dispatch:\n  default_budget_usd: 5\n").settings.default_budget_usd).toBe(5);
    expect(settingsOf("telemetry: off\n").settings.default_budget_usd).toBeUndefined();
  });

  it("reads the nested dispatch block", () => {
    const { settings } = settingsOf("dispatch:\n  max_concurrent: 3\n  trusted_repos: [~/git/*]\n");
    expect(settings.max_concurrent).toBe(3);
    expect(settings.trusted_repos).toEqual(["~/git/*"]);
  });

  it("lets the flat key win over the nested block and reports the conflict", () => {
    const { settings, conflicts } = settingsOf(
      [
        "dispatch_max_concurrent: 4",
        "dispatch_heartbeat_seconds: 10",
        "dispatch:",
        "  max_concurrent: 2",
        "  heartbeat_seconds: 10",
        "  session_timeout_seconds: 600",
      ].join("\n"),
    );
    expect(settings.max_concurrent).toBe(4);
    expect(settings.heartbeat_seconds).toBe(10);
    expect(settings.session_timeout_seconds).toBe(600);
    expect(conflicts).toEqual([{ setting: "max_concurrent", flat: 4, nested: 2 }]);
  });

  it("does not mistake a nested default for a value the user wrote", () => {
    const { settings, conflicts } = settingsOf(
      "dispatch_max_concurrent: 4\ndispatch:\n  trusted_repos: [~/git/*]\n",
    );
    expect(settings.max_concurrent).toBe(4);
    expect(conflicts).toEqual([]);
  });

  it("leaves the nested block as written when parsing the file", () => {
    expect(parseYaml("daemon-config", "dispatch:\n  heartbeat_seconds: 10\n")).toEqual({
      dispatch: { heartbeat_seconds: 10 },
    });
  });

  it("does not report equal lists given both ways", () => {
    const { conflicts } = settingsOf("dispatch_trusted_repos: a,b\ndispatch:\n  trusted_repos: [a, b]\n");
    expect(conflicts).toEqual([]);
  });

  it("names the flat key when a flat value breaks a rule", () => {
    try {
      settingsOf("dispatch_max_concurrent: 99\n");
      expect.unreachable();
    } catch (error) {
      expect(ContractError.isInstance(error)).toBe(true);
      const issues = (error as ContractError).issues;
      expect(issues).toEqual([
        { path: "dispatch_max_concurrent", rule: "too_big", message: "must be at most 32" },
      ]);
      expect((error as ContractError).source).toBe("config.yaml");
    }
  });

  it("names the nested path when a nested value breaks a rule", () => {
    try {
      resolveDispatchSettings({ dispatch: { heartbeat_seconds: 1 } });
      expect.unreachable();
    } catch (error) {
      expect((error as ContractError).issues[0]!.path).toBe("dispatch.heartbeat_seconds");
    }
  });

  it("refuses a flat URL that is not http(s)", () => {
    expect(() => settingsOf("dispatch_clawvisor_url: ftp://clawvisor.example/\n")).toThrow(
      /dispatch_clawvisor_url: must be an http\(s\) URL/,
    );
  });
});

import { completionCallbackSchema } from "@gstack/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SAMPLE_REPORT, sampleCompletion } from "./delivery-test-support";
import {
  completionCallbackBody,
  completionMessage,
  HOOKS_BODY_LIMIT_BYTES,
  hooksBody,
} from "./receiver-body";

const seed = Number(process.env.FC_SEED ?? Date.now() % 1_000_000);
console.log(`receiver-body properties: fast-check seed ${seed}`);

describe("completionMessage", () => {
  it("names status, commits, PR and every judgment item", () => {
    const message = completionMessage(sampleCompletion("dispatch-m1"), SAMPLE_REPORT, "/r/dispatch-m1.md");
    expect(message.split("\n").slice(0, 3)).toEqual([
      "gstack dispatch dispatch-m1 completed (acme-widget, claude) after 312 s",
      "Commits: 3 (abc1234, bcd2345, cde3456)",
      "PR: acme/widget#47",
    ]);
    expect(message).toContain(
      "Needs human judgment:\n- Should the limit be per IP or per account?\n- The staging key is expired",
    );
    expect(message).toContain("What shipped:\n- Rate limiting on /login (3 commits)");
    expect(message).toContain("Full report: /r/dispatch-m1.md");
    expect(message).not.toContain("Failure:");
  });

  it("says for a failure what went wrong and what to do", () => {
    const message = completionMessage(
      sampleCompletion("dispatch-m2", {
        status: "timeout",
        error: "ran 3600 s\nmore",
        error_kind: "timeout",
      }),
      "",
      "/r/dispatch-m2.md",
    );
    expect(message).toContain("Failure: timeout: ran 3600 s\n");
    expect(message).toContain("What to do: split the task or raise dispatch.session_timeout_seconds");
  });

  it("stays under OpenClaw's 256 KiB body limit whatever the report holds", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", minLength: 0, maxLength: 400_000 }), (summary) => {
        const report = `## What shipped\n${summary}\n## Needs human judgment\n- x\n`;
        const message = completionMessage(sampleCompletion("dispatch-m3"), report, "/r/x.md");
        for (const url of ["http://127.0.0.1:1/hooks/agent", "http://127.0.0.1:1/hooks/wake"]) {
          expect(Buffer.byteLength(JSON.stringify(hooksBody(url, message)))).toBeLessThan(
            HOOKS_BODY_LIMIT_BYTES,
          );
        }
      }),
      { seed, numRuns: 30 },
    );
    for (const summary of ["\u0001".repeat(300_000), "é".repeat(300_000), "😀".repeat(150_000)]) {
      const message = completionMessage(
        sampleCompletion("dispatch-m3"),
        `## What shipped\n${summary}\n`,
        "/r/x.md",
      );
      const size = Buffer.byteLength(JSON.stringify(hooksBody("http://127.0.0.1:1/hooks/agent", message)));
      expect(size).toBeLessThan(HOOKS_BODY_LIMIT_BYTES);
      expect(size).toBeGreaterThan(150_000);
      expect(message).toContain("(cut; the full report is /r/x.md)");
    }
  });
});

describe("hooksBody", () => {
  it("uses {text, mode} for /hooks/wake and {message, name} otherwise", () => {
    expect(hooksBody("http://127.0.0.1:18789/hooks/wake/", "hi")).toEqual({ text: "hi", mode: "now" });
    expect(hooksBody("http://127.0.0.1:18789/hooks/agent", "hi")).toEqual({ message: "hi", name: "gstack" });
  });
});

describe("completionCallbackBody", () => {
  it("is a valid completion-callback carrying summary, judgment items and the report", () => {
    const body = completionCallbackBody(
      sampleCompletion("dispatch-m4"),
      SAMPLE_REPORT,
      new Date("2026-11-23T10:00:00Z"),
    );
    expect(completionCallbackSchema.parse(body)).toEqual(body);
    expect(body).toMatchObject({
      type: "gstack.dispatch.completion",
      dispatch_id: "dispatch-m4",
      sent_at: "2026-11-23T10:00:00.000Z",
      needs_judgment: ["Should the limit be per IP or per account?", "The staging key is expired"],
      report_markdown: SAMPLE_REPORT,
    });
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseAnswerWords } from "./answer";
import { answerCommandLine, answerCommands, type GateChoices, waitingLines } from "./awaiting";
import { optionLetter, parseGateReply } from "./gate-reply";

const ID = "dispatch-a";

/** A shell's reading of a line: words split on spaces, a double-quoted word taken whole. */
function shellWords(line: string): string[] {
  return [...line.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g)].map((match) =>
    match[1] !== undefined ? match[1].replace(/\\(.)/g, "$1") : (match[2] ?? ""),
  );
}

/** Gate decisions as gstack writes them: labels of the reply grammar, 1–5 options, a recommendation or none. */
const gateItems = fc
  .uniqueArray(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 6 })
  .chain((numbers) =>
    fc.tuple(
      ...numbers.map((n) =>
        fc.integer({ min: 1, max: 5 }).chain((count) =>
          fc.record({
            label: fc.constantFrom(`d${n}`, `p${n}`, `uc${n}`),
            options: fc.constant(Array.from({ length: count }, (_, index) => `option ${index}`)),
            recommended: fc.option(
              fc.integer({ min: 0, max: count - 1 }).map((index) => `option ${index}`),
              {
                nil: null,
              },
            ),
          }),
        ),
      ),
    ),
  )
  .filter((rows) => new Set(rows.map((row) => row.label)).size === rows.length);

describe("the commands a terminal shows for a wait", () => {
  it("answers a plan with approve, revise and reject, each as the answer command reads it", () => {
    const commands = answerCommands({ kind: "plan" });
    expect(commands.map((command) => answerCommandLine(ID, 2, command))).toEqual([
      `gstack-dispatch answer ${ID} approve --round 2`,
      `gstack-dispatch answer ${ID} revise "<what to change>" --round 2`,
      `gstack-dispatch answer ${ID} reject "<why>" --round 2`,
    ]);
    expect(commands.map((command) => parseAnswerWords(ID, command.words).kind)).toEqual([
      "approve",
      "revise",
      "reject",
    ]);
  });

  it("offers for a gate only replies the gate accepts, and the shell gives the answer command those words", () => {
    fc.assert(
      fc.property(gateItems, fc.integer({ min: 1, max: 9 }), (items: GateChoices[], round) => {
        const commands = answerCommands({ kind: "gate" }, items);
        for (const command of commands) {
          const line = answerCommandLine(ID, round, command);
          expect(shellWords(line)).toEqual([
            "gstack-dispatch",
            "answer",
            ID,
            ...command.words,
            "--round",
            String(round),
          ]);
          const answer = parseAnswerWords(ID, command.words);
          if (answer.kind === "reply") {
            const checked = parseGateReply(
              ID,
              answer.reply,
              items.map((item) => ({ ...item, id: item.label, title: "" })),
            );
            expect(checked.choices).toHaveLength(items.length);
          } else expect(answer.kind).toBe("reject");
        }
        // The first takes the recommendations, and `a` where there is none.
        expect(commands[0]?.words).toEqual(
          items.map((item) => {
            const index = item.recommended === null ? 0 : item.options.indexOf(item.recommended);
            return `${item.label}${optionLetter(index)}`;
          }),
        );
        // `all` only when every decision has a recommendation.
        expect(commands.some((command) => command.words.join(" ") === "all")).toBe(
          items.every((item) => item.recommended !== null),
        );
        expect(commands.at(-1)?.words[0]).toBe("reject");
      }),
    );
  });

  it("shows the plan in full, then the commands, each with what it does", () => {
    const lines = waitingLines(ID, {
      kind: "plan",
      since: "2026-11-22T12:00:00Z",
      expires_at: "2026-11-25T12:00:00Z",
      round: 1,
      summary: "## Plan\n1. Add plan.txt.\n2. Commit it.",
      how_to_answer: `gstack-dispatch answer ${ID} approve | revise "<what to change>" | reject "<why>"`,
    });
    expect(lines).toEqual([
      `${ID} waits for your answer to its plan (round 1) until 2026-11-25T12:00:00Z; unanswered, it then ends cancelled.`,
      "",
      "## Plan",
      "1. Add plan.txt.",
      "2. Commit it.",
      "",
      "Answer with one of:",
      `  gstack-dispatch answer ${ID} approve --round 1                    # carry the plan out, in the same agent session`,
      `  gstack-dispatch answer ${ID} revise "<what to change>" --round 1  # plan again with your words`,
      `  gstack-dispatch answer ${ID} reject "<why>" --round 1             # end the dispatch, cancelled`,
    ]);
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type AnswerInput, AnswerRefusal, answerFromRequest, answerWords, parseAnswerWords } from "./answer";

const text = fc
  .string({ minLength: 1, maxLength: 80 })
  .map((value) => value.trim())
  .filter((value) => value !== "" && !/\s{2,}/.test(value));

const answers: fc.Arbitrary<AnswerInput> = fc.oneof(
  fc.constant<AnswerInput>({ kind: "approve" }),
  text.map((feedback): AnswerInput => ({ kind: "revise", feedback })),
  text.map((reason): AnswerInput => ({ kind: "reject", reason })),
);

describe("answers to a waiting plan", () => {
  it("reads back every answer from its words", () => {
    fc.assert(
      fc.property(answers, (answer) => {
        expect(parseAnswerWords("dispatch-a", answerWords(answer))).toEqual(answer);
      }),
    );
  });

  it("joins the words after the verb into the feedback", () => {
    expect(parseAnswerWords("d", ["revise", "use", "tabs"])).toEqual({
      kind: "revise",
      feedback: "use tabs",
    });
    expect(parseAnswerWords("d", ["REJECT", "not now"])).toEqual({ kind: "reject", reason: "not now" });
  });

  it.each([
    [[], /the answer is empty/],
    [["yes"], /"yes" is not an answer/],
    [["no"], /"no" is not an answer/],
    [["revise"], /revise needs the change/],
    [["reject", "  "], /reject needs a reason/],
    [["approve", "but faster"], /approve takes no text/],
  ])("refuses %j, saying what to send instead", (words, why) => {
    try {
      parseAnswerWords("dispatch-a", words);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(AnswerRefusal);
      expect((error as AnswerRefusal).rule).toBe("unparseable");
      expect((error as Error).message).toMatch(why);
      expect((error as Error).message).toContain('gstack-dispatch answer dispatch-a approve | revise "');
    }
  });

  it("takes the service API's fields through the same checks, keeping the round", () => {
    expect(answerFromRequest("d", { answer: "revise", text: "smaller", round: 2 })).toEqual({
      kind: "revise",
      feedback: "smaller",
      round: 2,
    });
    expect(() => answerFromRequest("d", { answer: "reject" })).toThrow(/reject needs a reason/);
  });
});

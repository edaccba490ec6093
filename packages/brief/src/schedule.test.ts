import { describe, expect, it } from "vitest";
import { scheduleArguments, scheduledBriefMessage } from "./schedule";

describe("scheduleArguments", () => {
  it("makes an isolated, announced automation on the person's channel", () => {
    expect(
      scheduleArguments({
        cron: "0 9 * * 1-5",
        tz: "Europe/Berlin",
        channel: "telegram",
        to: "12345",
        projects: ["baku"],
      }),
    ).toEqual([
      "automations",
      "create",
      "0 9 * * 1-5",
      scheduledBriefMessage(["baku"]),
      "--name",
      "gstack brief",
      "--tz",
      "Europe/Berlin",
      "--session",
      "isolated",
      "--announce",
      "--channel",
      "telegram",
      "--to",
      "12345",
      "--json",
    ]);
    expect(scheduledBriefMessage(["baku"])).toContain("Also brief me on baku every time");
    expect(scheduledBriefMessage()).toContain("call gstack_brief with that project");
  });

  it("refuses a schedule that is not five cron fields, and a delivery with no address", () => {
    expect(() => scheduleArguments({ cron: "9am", channel: "telegram", to: "1" })).toThrow(/five-field cron/);
    expect(() => scheduleArguments({ cron: "0 9 * * *", channel: "telegram", to: " " })).toThrow(
      /to must name/,
    );
  });
});

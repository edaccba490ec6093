import { describe, expect, it } from "vitest";
import { renderTable } from "./text-table";

describe("renderTable", () => {
  it("pads columns to the widest cell and right-aligns numbers", () => {
    expect(
      renderTable(
        ["project", "time"],
        [
          ["acme-widget", "5m"],
          ["baku", "1h 30m"],
        ],
        { alignRight: [1] },
      ),
    ).toBe(
      ["project        time", "-----------  ------", "acme-widget      5m", "baku         1h 30m"].join("\n"),
    );
  });
});

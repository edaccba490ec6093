/**
 * Lays out rows as a plain-text table: columns padded to their widest cell, two spaces
 * apart, a header and a rule. Columns listed in `alignRight` are right-aligned (numbers).
 */
export function renderTable(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
  options: { alignRight?: readonly number[] } = {},
): string {
  const right = new Set(options.alignRight ?? []);
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...rows.map((row) => (row[column] ?? "").length)),
  );
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) =>
        right.has(column) ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!),
      )
      .join("  ")
      .trimEnd();
  return [line(headers), widths.map((width) => "-".repeat(width)).join("  "), ...rows.map(line)].join("\n");
}

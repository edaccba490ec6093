/** One file of a diff against the base, as the review page shows it. */
export interface DiffFile {
  /** The path as git names it (after a rename, the new one). */
  path: string;
  /** The old path, when the file was renamed or copied. */
  from?: string;
  status: "added" | "deleted" | "modified" | "renamed";
  binary: boolean;
  added: number;
  removed: number;
  /** The hunks' lines (starting with @@, +, - or a space), without the file header. */
  lines: string[];
}

/**
 * Splits the text of `git diff` (default prefixes, no colour) into files. Paths come from the
 * `---`/`+++` lines (or, for a binary, a rename or a mode change, from the header's own lines);
 * git's quoting of unusual names (`"a/\303\244"`) is undone.
 */
export function parseGitDiff(text: string): DiffFile[] {
  const files: DiffFile[] = [];
  if (!text.trim()) return files;
  const chunks = text.split(/^(?=diff --git )/m).filter((chunk) => chunk.startsWith("diff --git "));
  for (const chunk of chunks) {
    const rows = chunk.split("\n");
    if (rows[rows.length - 1] === "") rows.pop();
    const header = rows[0] ?? "";
    let index = 1;
    let oldPath: string | undefined;
    let newPath: string | undefined;
    let renameFrom: string | undefined;
    let renameTo: string | undefined;
    let status: DiffFile["status"] = "modified";
    let binary = false;
    for (; index < rows.length; index++) {
      const row = rows[index] as string;
      if (row.startsWith("@@")) break;
      if (row.startsWith("new file mode")) status = "added";
      else if (row.startsWith("deleted file mode")) status = "deleted";
      else if (row.startsWith("rename from ")) renameFrom = unquote(row.slice(12));
      else if (row.startsWith("rename to ")) renameTo = unquote(row.slice(10));
      else if (row.startsWith("Binary files ")) binary = true;
      else if (row.startsWith("--- ")) oldPath = stripPrefix(unquote(row.slice(4)), "a/");
      else if (row.startsWith("+++ ")) newPath = stripPrefix(unquote(row.slice(4)), "b/");
    }
    const lines = rows.slice(index);
    let added = 0;
    let removed = 0;
    for (const line of lines) {
      if (line.startsWith("+")) added++;
      else if (line.startsWith("-")) removed++;
    }
    const fromHeader = headerPaths(header);
    const path =
      renameTo ??
      (newPath && newPath !== "/dev/null" ? newPath : undefined) ??
      (oldPath && oldPath !== "/dev/null" ? oldPath : undefined) ??
      fromHeader?.[1] ??
      header.slice(11);
    if (renameFrom || renameTo) status = "renamed";
    files.push({
      path,
      ...(renameFrom ? { from: renameFrom } : {}),
      status,
      binary,
      added,
      removed,
      lines,
    });
  }
  return files;
}

function stripPrefix(path: string, prefix: string): string {
  return path.startsWith(prefix) ? path.slice(prefix.length) : path;
}

/** `a/x b/x` of a header whose two names are the same (the only case git leaves unambiguous). */
function headerPaths(header: string): [string, string] | undefined {
  const rest = header.slice("diff --git ".length);
  if (rest.startsWith('"')) return undefined;
  const half = (rest.length - 1) / 2;
  if (!Number.isInteger(half)) return undefined;
  const a = rest.slice(0, half);
  const b = rest.slice(half + 1);
  if (a.startsWith("a/") && b.startsWith("b/") && a.slice(2) === b.slice(2)) return [a.slice(2), b.slice(2)];
  return undefined;
}

/** Undoes git's C-style quoting of a path (octal escapes are UTF-8 bytes). */
export function unquote(text: string): string {
  const trimmed = text.replace(/\t$/, "");
  if (!trimmed.startsWith('"') || !trimmed.endsWith('"') || trimmed.length < 2) return trimmed;
  const body = trimmed.slice(1, -1);
  const bytes: number[] = [];
  for (let i = 0; i < body.length; i++) {
    const char = body[i] as string;
    if (char !== "\\") {
      for (const byte of Buffer.from(char, "utf8")) bytes.push(byte);
      continue;
    }
    const next = body[i + 1] ?? "";
    if (/[0-7]/.test(next)) {
      bytes.push(Number.parseInt(body.slice(i + 1, i + 4), 8));
      i += 3;
      continue;
    }
    const simple: Record<string, number> = {
      n: 10,
      t: 9,
      '"': 34,
      "\\": 92,
      a: 7,
      b: 8,
      f: 12,
      r: 13,
      v: 11,
    };
    bytes.push(simple[next] ?? next.charCodeAt(0));
    i += 1;
  }
  return Buffer.from(bytes).toString("utf8");
}

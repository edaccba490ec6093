/**
 * Why git would refuse `name` as a branch name, or undefined when it is a good one. The rules
 * are those of `git check-ref-format --branch` for a plain name, plus one git leaves to its
 * callers: a name starting with `-` would be read as an option.
 */
export function branchNameProblem(name: string): string | undefined {
  if (name.length === 0) return "must not be empty";
  if (name.startsWith("-")) return "must not start with '-' (git would read it as an option)";
  if (name === "HEAD" || name === "@") return `must not be '${name}'`;
  if (name.length > 255) return "must be at most 255 characters";
  for (const char of name) {
    const code = char.codePointAt(0) ?? 0;
    if (code < 0x20 || code === 0x7f) return "must not contain control characters";
  }
  const forbidden = /[ ~^:?*[\\]/.exec(name);
  if (forbidden) return `must not contain '${forbidden[0]}'`;
  if (name.includes("..")) return "must not contain '..'";
  if (name.includes("@{")) return "must not contain '@{'";
  if (name.startsWith("/") || name.endsWith("/")) return "must not start or end with '/'";
  if (name.includes("//")) return "must not contain '//'";
  if (name.endsWith(".")) return "must not end with '.'";
  for (const part of name.split("/")) {
    if (part.startsWith(".")) return "no part between '/' may start with '.'";
    if (part.endsWith(".lock")) return "no part between '/' may end with '.lock'";
  }
  return undefined;
}

/** The branch a dispatch works on when it names none. */
export function defaultBranch(dispatchId: string): string {
  return `gstack/${dispatchId}`;
}

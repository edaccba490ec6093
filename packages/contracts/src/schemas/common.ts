import { lazySchema, loadZod } from "../lazy";
import { isTimestamp, TIMESTAMP_PATTERN } from "../timestamp";

/**
 * An RFC 3339 timestamp with a timezone (`Z` or an offset), as every shared file writes it; a
 * leap second (`23:59:60Z`) is valid (see `isTimestamp`).
 */
export const timestampSchema = lazySchema((z) =>
  z.stringFormat("datetime", isTimestamp).meta({ format: "date-time", pattern: TIMESTAMP_PATTERN.source }),
);

/** A name that is safe as a file name on every platform: no separators, no dot segments. */
export const safeNamePattern = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** The characters of a project slug (its length is checked apart: 1 to 200). */
export const projectSlugPattern = /^(?!\.{1,2}$)[A-Za-z0-9._-]+$/;

/** A gstack project slug: letters, digits, `.`, `_` and `-`, never `.` or `..` alone. */
export const projectSlugSchema = lazySchema((z) =>
  z.string().min(1).max(200).regex(projectSlugPattern, {
    message: "must be a project slug (letters, digits, '.', '_' and '-' only)",
  }),
);

/**
 * Text a person reads or a command line carries: no C0 control characters other than tab, line
 * feed and carriage return (so no ESC to start a terminal escape sequence, no BEL), no DEL, no C1
 * controls, and none of the bidirectional embeddings, overrides and isolates (U+202A–U+202E,
 * U+2066–U+2069) that make text read differently from how it runs. The direction marks (U+061C,
 * U+200E, U+200F) stay allowed here: in running text they are how a writer of Arabic or Hebrew
 * fixes where punctuation and numbers show, and they cannot reorder letters.
 */
export const SAFE_TEXT_PATTERN =
  /^[^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]*$/;
export const SAFE_TEXT_MESSAGE =
  "must not contain control characters (other than tab and line breaks) or bidirectional overrides";

/** Free text of any length (a task's learnings, a reason) without what {@link SAFE_TEXT_PATTERN} refuses. */
export const safeTextSchema = lazySchema((z) =>
  z.string().regex(SAFE_TEXT_PATTERN, { message: SAFE_TEXT_MESSAGE }),
);

/**
 * One line a person reads, such as a name or an id: no control character at all (so no tab or
 * line break either), no bidirectional embedding, override or isolate, and no direction mark,
 * which in a value shown on its own only hides a difference between two values that look alike.
 */
export const SAFE_LINE_PATTERN =
  /^[^\u0000-\u001F\u007F-\u009F\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]*$/;
export const SAFE_LINE_MESSAGE =
  "must be one line without control characters, bidirectional overrides or direction marks";

/** A non-empty {@link SAFE_LINE_PATTERN} line, such as an id from another system. */
export const safeLineSchema = lazySchema((z) =>
  z.string().min(1).regex(SAFE_LINE_PATTERN, { message: SAFE_LINE_MESSAGE }),
);

/**
 * Characters that show nothing on their own: white space, C0 and C1 controls, the soft hyphen,
 * joiners and other zero-width or default-ignorable characters of the Basic Multilingual Plane
 * (U+034F, U+061C, U+115F–U+1160, U+17B4–U+17B5, U+180B–U+180F, U+200B–U+200F, U+2060–U+206F,
 * U+3164, U+FE00–U+FE0F, U+FEFF, U+FFA0, U+FFF0–U+FFF8) and the blank braille pattern. Only the
 * Basic Multilingual Plane is listed, so that the pattern means the same to a validator that
 * reads a string by UTF-16 units (zod) and one that reads it by code points (JSON Schema): a
 * character beyond it counts as visible.
 */
const INVISIBLE =
  "\\u0000-\\u0020\\u007F-\\u00A0\\u00AD\\u034F\\u061C\\u115F\\u1160\\u1680\\u17B4\\u17B5\\u180B-\\u180F" +
  "\\u2000-\\u200F\\u2028-\\u202F\\u205F-\\u206F\\u2800\\u3000\\u3164\\uFE00-\\uFE0F\\uFEFF\\uFFA0\\uFFF0-\\uFFF8";

/**
 * Text with at least one visible character (see {@link INVISIBLE}): a name made only of spaces,
 * a zero-width joiner or a direction mark would show as nothing.
 */
export const VISIBLE_TEXT_PATTERN = new RegExp(`^[${INVISIBLE}]*[^${INVISIBLE}]`);
export const VISIBLE_TEXT_MESSAGE =
  "must contain at least one visible character (not only spaces, joiners or other invisible characters)";

/** A name a person reads, such as who dispatched a task: one safe line with a visible character. */
export const displayNameSchema = lazySchema((z) =>
  z
    .string()
    .min(1)
    .regex(VISIBLE_TEXT_PATTERN, { message: VISIBLE_TEXT_MESSAGE })
    .regex(SAFE_LINE_PATTERN, { message: SAFE_LINE_MESSAGE }),
);

/** A string without NUL, which no file path can hold (and which would cut a path short in C). */
export const NO_NUL_PATTERN = /^[^\u0000]*$/;
export const NO_NUL_MESSAGE = "must not contain a NUL character (no path can hold one)";

/** A file or folder path: not empty, no NUL. */
export const pathSchema = lazySchema((z) =>
  z.string().min(1).regex(NO_NUL_PATTERN, { message: NO_NUL_MESSAGE }),
);

/** A path in a list (a glob or a relative path), empty allowed as it always was: no NUL. */
export const pathEntrySchema = lazySchema((z) =>
  z.string().regex(NO_NUL_PATTERN, { message: NO_NUL_MESSAGE }),
);

/** The first character of a git ref or revision: anything but `-`, which git reads as an option. */
export const GIT_REF_START_PATTERN = /^[^-]/;
export const GIT_REF_START_MESSAGE = "must not start with '-' (git would read it as an option)";

/**
 * A git branch, tag or revision (`main`, `v1.2`, `HEAD~2`, a commit hash) that reaches a git
 * command line and a person's screen: not empty, not starting with `-`, one safe line. Whether
 * git itself takes the name is checked where the ref is used.
 */
export const gitRefSchema = lazySchema((z) =>
  z
    .string()
    .min(1)
    .regex(GIT_REF_START_PATTERN, { message: GIT_REF_START_MESSAGE })
    .regex(SAFE_LINE_PATTERN, { message: SAFE_LINE_MESSAGE }),
);

/**
 * The characters of a skill or kind of work (`ship`, `plan-ceo-review`): at least one visible
 * one, no path separator, no control character (so no line break), no bidirectional control or
 * mark, and not `.` or `..`, since it can end up in a path or on one line of a report. Its
 * length (1 to 128 characters) is checked apart, counted in code points as JSON Schema counts.
 */
export const SKILL_NAME_PATTERN = new RegExp(
  `^(?!\\.{1,2}$)(?=[${INVISIBLE}]*[^${INVISIBLE}])[^/\\\\\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u202A-\\u202E\\u2066-\\u2069]*$`,
);
export const SKILL_NAME_MAX = 128;

/** A skill name (see {@link SKILL_NAME_PATTERN}), 1 to {@link SKILL_NAME_MAX} characters. */
export const skillNameSchema = lazySchema(() =>
  boundedString(SKILL_NAME_MAX, 1).regex(SKILL_NAME_PATTERN, {
    message:
      "must be a skill name: 1 to 128 characters with a visible one, no '/' or '\\', no control characters or bidirectional controls, not '.' or '..'",
  }),
);

export const dispatchIdPattern = /^dispatch-[A-Za-z0-9_-]{1,120}$/;

/** Dispatch ids name files, so they are restricted to a safe alphabet. */
export const dispatchIdSchema = lazySchema((z) =>
  z.string().regex(dispatchIdPattern, {
    message: "must start with 'dispatch-' followed by 1 to 120 letters, digits, '_' or '-'",
  }),
);

/** The agents every daemon knows without configuration; a config may name any others. */
export const targetAgents = ["claude", "codex", "cursor", "gemini"] as const;

/** An agent's name: 1 to 32 lower-case letters, digits and `-`, starting with a letter or digit. */
export const targetAgentPattern = /^[a-z0-9][a-z0-9-]{0,31}$/;

/**
 * The coding agent a dispatch targets: a built-in one ({@link targetAgents}) or any name the
 * daemon's config gives an agent; whether the name is known is the daemon's question.
 */
export const targetAgentSchema = lazySchema((z) =>
  z.string().regex(targetAgentPattern, {
    message:
      "must be an agent name: 1 to 32 lower-case letters, digits and '-', starting with a letter or digit",
  }),
);

const h16 = "[0-9A-Fa-f]{1,4}";
const octet = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
const ipv4 = `${octet}(?:\\.${octet}){3}`;
const ls32 = `(?:${h16}:${h16}|${ipv4})`;
const ipv6 = [
  `(?:${h16}:){6}${ls32}`,
  `::(?:${h16}:){5}${ls32}`,
  `(?:${h16})?::(?:${h16}:){4}${ls32}`,
  `(?:(?:${h16}:){0,1}${h16})?::(?:${h16}:){3}${ls32}`,
  `(?:(?:${h16}:){0,2}${h16})?::(?:${h16}:){2}${ls32}`,
  `(?:(?:${h16}:){0,3}${h16})?::${h16}:${ls32}`,
  `(?:(?:${h16}:){0,4}${h16})?::${ls32}`,
  `(?:(?:${h16}:){0,5}${h16})?::${h16}`,
  `(?:(?:${h16}:){0,6}${h16})?::`,
].join("|");
const label = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
const topLabel = "[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
const port = "(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}|0)";
const pchar = "(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})";

/**
 * An absolute http(s) URL without user info: a host name (whose last label starts with a
 * letter), a dotted IPv4 address or a bracketed IPv6 address, an optional port up to 65535,
 * then RFC 3986 path, query and fragment characters. Every string it accepts is both an
 * RFC 3986 URI and a URL that `new URL()` (and so `fetch`) accepts, which keeps the zod
 * schema and the published JSON Schema in exact agreement.
 */
export const HTTP_URL_PATTERN = new RegExp(
  `^[Hh][Tt][Tt][Pp][Ss]?://(?:(?:${label}\\.)*${topLabel}|${ipv4}|\\[(?:${ipv6})\\])(?::${port})?` +
    `(?:/${pchar}*)*(?:\\?(?:${pchar}|[/?])*)?(?:#(?:${pchar}|[/?])*)?$`,
);

/** An http(s) URL, such as a callback or a Clawvisor address (see {@link HTTP_URL_PATTERN}). */
export const httpUrlSchema = lazySchema((z) =>
  z
    .string()
    .regex(HTTP_URL_PATTERN, {
      message: "must be an http(s) URL such as https://host.example/path (no user name or password)",
    })
    .meta({ format: "uri" }),
);

/**
 * A string of at most `maximum` characters, counted as Unicode code points the way JSON
 * Schema's `maxLength` counts them (zod's own `.max()` counts UTF-16 units, so an emoji
 * would count twice and the two schemas would disagree).
 */
export function boundedString(maximum: number, minimum = 0) {
  const { z } = loadZod();
  return (
    (minimum > 0 ? z.string().min(minimum) : z.string())
      // A string of at most `maximum` UTF-16 units has at most that many code points, so only
      // longer strings need counting.
      .refine((text) => text.length <= maximum || codePointLength(text) <= maximum, {
        message: `must be at most ${maximum} characters long`,
        abort: true,
      })
      .meta({ maxLength: maximum })
  );
}

/** The number of Unicode code points in `text` (a surrogate pair counts once). */
export function codePointLength(text: string): number {
  // Every UTF-16 unit is one code point except the low half of a well-formed surrogate
  // pair; a lone surrogate counts as one, as the string iterator counts it.
  let count = text.length;
  for (let index = 1; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    if (unit >= 0xdc00 && unit <= 0xdfff) {
      const previous = text.charCodeAt(index - 1);
      if (previous >= 0xd800 && previous <= 0xdbff) {
        count--;
        index++;
      }
    }
  }
  return count;
}

export const nonEmptyString = lazySchema((z) => z.string().min(1));
export const stringList = lazySchema((z) => z.array(z.string()));

/** The largest spend cap a dispatch or the daemon's default may set, in US dollars. */
export const MAX_BUDGET_USD = 10_000;

/** A spend cap in US dollars: more than nothing, at most `MAX_BUDGET_USD`. */
export const budgetUsdSchema = lazySchema((z) => z.number().positive().max(MAX_BUDGET_USD));

import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { link, lstat, open, rename, unlink } from "node:fs/promises";
import { basename, join } from "node:path";
import {
  ContractError,
  type Dispatch,
  dispatchIdSchema,
  isSafeName,
  parseJson,
  verifyDocument,
  writeFileAtomic,
} from "@gstack/contracts";
import { checkProjectDir, entryExists } from "@gstack/daemon-client";
import { expiresAt } from "../expiry";
import { branchNameProblem } from "../worktree/branch-name";

/** Dispatch files larger than this are refused before they are read. */
export const MAX_DISPATCH_BYTES = 256 * 1024;

/** Why a dispatch was refused: a rule name and a sentence a person can act on. */
export interface Refusal {
  rule: string;
  reason: string;
  /** `expired` dispatches are audited as such; everything else as `rejected`. */
  event: "rejected" | "expired";
  /** The dispatch id when the file had a usable one. */
  id?: string;
}

/** True for names the daemon takes from `dispatch/`: visible `*.json` files. */
export function isDispatchFileName(name: string): boolean {
  return name.endsWith(".json") && !name.startsWith(".") && name.length > ".json".length;
}

/**
 * Checks an incoming entry before touching its content: it must be a regular file (not a
 * symbolic link) no larger than the cap.
 */
export async function inspectIncoming(
  path: string,
  maxBytes = MAX_DISPATCH_BYTES,
): Promise<Refusal | undefined> {
  const info = await lstat(path);
  if (info.isSymbolicLink()) {
    return {
      rule: "symlink",
      reason: "is a symbolic link; dispatch files must be regular files",
      event: "rejected",
    };
  }
  if (!info.isFile()) return { rule: "file-type", reason: "is not a regular file", event: "rejected" };
  if (info.size > maxBytes) {
    return {
      rule: "size",
      reason: `is ${info.size} bytes, more than the ${maxBytes}-byte limit`,
      event: "rejected",
    };
  }
  return undefined;
}

/**
 * Takes an incoming file: renames it to a name private to this daemon inside `claimedDir`.
 * Exactly one of several racing daemons wins; the others get undefined.
 */
export async function claimIncoming(path: string, claimedDir: string): Promise<string | undefined> {
  const privateName = join(claimedDir, `.claim-${process.pid}-${randomBytes(6).toString("hex")}`);
  try {
    await rename(path, privateName);
    return privateName;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/**
 * Gives a claimed file its final name `{id}.json` without ever replacing another file: a
 * hard link fails when the name is taken, which is how a duplicate id is noticed.
 */
export async function settleClaim(privatePath: string, finalPath: string): Promise<boolean> {
  try {
    await link(privatePath, finalPath);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
  await unlink(privatePath);
  return true;
}

/** Thrown by {@link readClaimed} for a file that must be refused; carries the refusal rule. */
export class UnreadableDispatchError extends Error {
  override readonly name = "UnreadableDispatchError";
  readonly rule: string;
  constructor(rule: string, message: string) {
    super(message);
    this.rule = rule;
  }
}

/**
 * Reads a claimed file safely whatever was swapped in after it was inspected: it is opened
 * once without following a symbolic link and without blocking (a FIFO would otherwise wedge
 * the reader), the opened descriptor must be a regular file, and at most `maxBytes + 1`
 * bytes are read (a device like /dev/zero reports size 0 and never ends). The text must be
 * valid UTF-8. Throws an {@link UnreadableDispatchError} naming the rule otherwise.
 */
export async function readClaimed(path: string, maxBytes = MAX_DISPATCH_BYTES): Promise<string> {
  return decodeUtf8(await readClaimedBytes(path, maxBytes));
}

/**
 * The bytes of a claimed file, read as {@link readClaimed} reads them (one open without
 * following links or blocking, a regular file, at most `maxBytes`), not yet decoded: intake
 * hands them to {@link judgeDispatch}, which decodes them strictly.
 */
export async function readClaimedBytes(path: string, maxBytes = MAX_DISPATCH_BYTES): Promise<Uint8Array> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ELOOP" || code === "EMLINK") {
      throw new UnreadableDispatchError(
        "symlink",
        "is a symbolic link; dispatch files must be regular files",
      );
    }
    throw error;
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new UnreadableDispatchError("file-type", "is not a regular file");
    if (info.size > maxBytes) {
      throw new UnreadableDispatchError(
        "size",
        `is ${info.size} bytes, more than the ${maxBytes}-byte limit`,
      );
    }
    const buffer = Buffer.allocUnsafe(maxBytes + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > maxBytes) {
      throw new UnreadableDispatchError("size", `grew past the ${maxBytes}-byte limit while it was read`);
    }
    return buffer.subarray(0, length);
  } finally {
    await handle.close();
  }
}

/** Decodes UTF-8 strictly; an invalid byte is refused with its offset instead of being replaced. */
export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new UnreadableDispatchError(
      "encoding",
      `is not valid UTF-8 (first invalid byte at offset ${firstInvalidUtf8Offset(bytes)})`,
    );
  }
}

/** The offset of the first byte that does not start or continue a valid UTF-8 sequence. */
export function firstInvalidUtf8Offset(bytes: Uint8Array): number {
  let index = 0;
  while (index < bytes.length) {
    const lead = bytes[index] as number;
    let length: number;
    let minimum: number;
    if (lead < 0x80) {
      index += 1;
      continue;
    }
    if (lead >= 0xc2 && lead <= 0xdf) [length, minimum] = [2, 0x80];
    else if (lead >= 0xe0 && lead <= 0xef) [length, minimum] = [3, 0x800];
    else if (lead >= 0xf0 && lead <= 0xf4) [length, minimum] = [4, 0x10000];
    else return index;
    if (index + length > bytes.length) return index;
    let point = lead & (0xff >> (length + 1));
    for (let offset = 1; offset < length; offset += 1) {
      const next = bytes[index + offset] as number;
      if ((next & 0xc0) !== 0x80) return index;
      point = (point << 6) | (next & 0x3f);
    }
    if (point < minimum || point > 0x10ffff || (point >= 0xd800 && point <= 0xdfff)) return index;
    index += length;
  }
  return bytes.length;
}

/** What a dispatch is checked against. */
export interface DispatchCheckContext {
  source: string;
  now: Date;
  /** When the daemon first saw the file; anchors ttl_seconds without created_at. */
  firstSeen: Date;
  /** Set when dispatches must carry a valid signature. */
  secret?: string;
  knownAgents: readonly string[];
}

/**
 * Parses and checks a dispatch's content: the schema, the signature, the ttl and the
 * target agent. Pure; the project folder is checked separately by {@link checkProjectDir}.
 */
export function checkDispatch(
  text: string,
  context: DispatchCheckContext,
): { ok: true; dispatch: Dispatch } | { ok: false; refusal: Refusal } {
  let dispatch: Dispatch;
  let raw: unknown;
  try {
    dispatch = parseJson("dispatch", text, { source: context.source });
    raw = JSON.parse(text);
  } catch (error) {
    const id = idOf(text);
    if (ContractError.isInstance(error)) {
      const issue = error.issues[0];
      return {
        ok: false,
        refusal: {
          rule: issue?.rule === "json" ? "json" : "schema",
          reason: error.message,
          event: "rejected",
          ...(id ? { id } : {}),
        },
      };
    }
    throw error;
  }
  const refuse = (rule: string, reason: string, event: Refusal["event"] = "rejected") => ({
    ok: false as const,
    refusal: { rule, reason, event, id: dispatch.id },
  });
  if (context.secret !== undefined) {
    const check = verifyDocument(raw as Record<string, unknown>, context.secret);
    if (!check.ok) {
      const why = {
        missing: "is not signed, and this daemon requires signed dispatches (source_signature)",
        malformed: "has a malformed source_signature",
        mismatch: "has a source_signature that does not match its content (forged or altered)",
      }[check.reason];
      return refuse(`signature-${check.reason}`, why);
    }
  }
  const expiry = expiresAt(dispatch, context.firstSeen);
  if (expiry !== undefined && expiry.getTime() <= context.now.getTime()) {
    return refuse(
      "ttl",
      `expired at ${expiry.toISOString()} (ttl_seconds ${dispatch.ttl_seconds})`,
      "expired",
    );
  }
  if (!context.knownAgents.includes(dispatch.target_agent)) {
    return refuse(
      "target-agent",
      `target_agent '${dispatch.target_agent}' is neither a built-in agent nor one configured and installed here (dispatch.agents in config.yaml); the agents here: ${context.knownAgents.join(", ")}`,
    );
  }
  return { ok: true, dispatch };
}

/** Everything intake checks a dispatch against, whichever way it arrived. */
export interface IntakeRules extends DispatchCheckContext {
  /** Content larger than this is refused (rule `size`). */
  maxBytes: number;
  /** Folders or globs `project_dir`, and the repository it belongs to, must lie in once real. */
  trustedRepos: readonly string[];
  /** Whether a `callback_url` may be used (the delivery's check); refused with its reason. */
  checkCallbackUrl(url: string): { ok: true } | { ok: false; reason: string };
  /** Where `~` in paths points; defaults to the process environment. */
  env?: NodeJS.ProcessEnv;
}

/** Intake's one answer about a dispatch: take it (with its project folder resolved), or why not. */
export type IntakeVerdict =
  | { ok: true; dispatch: Dispatch; projectDir: string }
  | { ok: false; refusal: Refusal };

const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/**
 * Judges a dispatch's content, the same for a dropped file (its bytes) and for one offered in
 * process (a string): the size cap, strict UTF-8, the schema, the signature when a secret
 * exists, the ttl, the target agent, the callback URL and the project folder and its repository
 * inside the trusted repos after following symbolic links. Touches no state of the daemon: whether the
 * id is already taken is the caller's question, since only it knows.
 */
export async function judgeDispatch(
  content: string | Uint8Array,
  rules: IntakeRules,
): Promise<IntakeVerdict> {
  const refuse = (rule: string, reason: string): IntakeVerdict => ({
    ok: false,
    refusal: { rule, reason, event: "rejected" },
  });
  let text: string;
  if (typeof content === "string") {
    // A string cannot hold invalid bytes, but a lone surrogate has no UTF-8 form at all.
    const lone = LONE_SURROGATE.exec(content);
    if (lone) {
      return refuse("encoding", `is not valid UTF-8 (a lone surrogate at character ${lone.index})`);
    }
    const size = Buffer.byteLength(content, "utf8");
    if (size > rules.maxBytes)
      return refuse("size", `is ${size} bytes, more than the ${rules.maxBytes}-byte limit`);
    text = content;
  } else {
    if (content.length > rules.maxBytes) {
      return refuse("size", `is ${content.length} bytes, more than the ${rules.maxBytes}-byte limit`);
    }
    try {
      text = decodeUtf8(content);
    } catch (error) {
      if (error instanceof UnreadableDispatchError) return refuse(error.rule, error.message);
      throw error;
    }
  }
  const checked = checkDispatch(text, rules);
  if (!checked.ok) return checked;
  const { dispatch } = checked;
  if (dispatch.callback_url) {
    const callback = rules.checkCallbackUrl(dispatch.callback_url);
    if (!callback.ok) {
      return {
        ok: false,
        refusal: { rule: "callback-url", reason: callback.reason, event: "rejected", id: dispatch.id },
      };
    }
  }
  const branchProblem = dispatch.branch !== undefined ? branchNameProblem(dispatch.branch) : undefined;
  if (branchProblem) {
    return {
      ok: false,
      refusal: {
        rule: "branch",
        reason: `branch: '${dispatch.branch}' ${branchProblem}`,
        event: "rejected",
        id: dispatch.id,
      },
    };
  }
  const project = await checkProjectDir(dispatch.project_dir, rules.trustedRepos, rules.env);
  if (!project.ok) return { ok: false, refusal: { ...project.refusal, id: dispatch.id } };
  return { ok: true, dispatch, projectDir: project.path };
}

function idOf(text: string): string | undefined {
  try {
    const value = JSON.parse(text) as { id?: unknown };
    return dispatchIdSchema.safeParse(value?.id).success ? (value.id as string) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Moves a refused file into `rejectedDir` as `{id}.json` next to `{id}.reason.json`. The
 * name is the dispatch id when usable, else a generated one; an existing pair is never
 * replaced (a suffix is added). A file that cannot be moved stays where it is.
 */
export async function rejectFile(
  filePath: string | undefined,
  rejectedDir: string,
  refusal: Refusal & { original: string; ts: string },
): Promise<string> {
  const stem =
    refusal.id && isSafeName(refusal.id) ? refusal.id : `rejected-${refusal.ts.replace(/[^0-9]/g, "")}`;
  let name = stem;
  while (await entryExists(join(rejectedDir, `${name}.reason.json`)))
    name = `${stem}-${randomBytes(3).toString("hex")}`;
  let kept: string | undefined = filePath;
  if (filePath) {
    try {
      await rename(filePath, join(rejectedDir, `${name}.json`));
      kept = join(rejectedDir, `${name}.json`);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") kept = undefined;
    }
  }
  await writeFileAtomic(
    join(rejectedDir, `${name}.reason.json`),
    `${JSON.stringify({ file: basename(refusal.original), kept_at: kept, ...refusal }, null, 2)}\n`,
  );
  return name;
}

import { link, mkdir, open, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { ContractError } from "./errors";
import type { GstackLayout } from "./layout";
import { childPath } from "./layout";
import { nodeCrypto } from "./lazy";
import { parseValue } from "./parse";
import type { DispatchInput } from "./schemas/dispatch";
import { withSignature } from "./signature";

/** What {@link writeDispatchFile} wrote. */
export interface WrittenDispatch {
  /** The dispatch id (also the file name without `.json`). */
  id: string;
  /** Where the finished file now lives, in `dispatch.incoming`. */
  path: string;
  /** The document exactly as written (with `created_at` and, when signed, `source_signature`). */
  document: Record<string, unknown>;
}

/**
 * Writes a dispatch file the way the daemon expects to receive it: the JSON goes to a
 * temporary file in `dispatch.tmp`, is flushed, then appears in `dispatch.incoming` in one
 * step, so the daemon never sees half a file. The document is validated against the
 * dispatch schema first; `created_at` is set to now when missing; with a `secret` the
 * document is signed (`source_signature`). An id already in use — waiting in `incoming`,
 * claimed, with a session folder or a completion report — is refused, never replaced.
 *
 * Defaults (such as `target_agent`) are not written into the file: the signature covers
 * the document as written, and the daemon applies the same defaults when it reads it.
 */
export async function writeDispatchFile(
  layout: GstackLayout,
  dispatch: DispatchInput,
  options: { secret?: string | Buffer; now?: Date } = {},
): Promise<WrittenDispatch> {
  const document = prepareDispatch(dispatch, options);
  const id = document.id as string;
  const target = childPath(layout.dispatch.incoming, id, ".json");

  // An id the daemon has already seen (claimed, running or finished) is taken for good:
  // its session folder and reports are keyed by it.
  const seen = [
    target,
    layout.dispatch.claimedFile(id),
    layout.dispatch.sessionDir(id),
    layout.dispatch.completedJson(id),
  ];
  for (const existing of seen) {
    if (await exists(existing)) throw duplicate(id, existing);
  }

  await mkdir(layout.dispatch.tmp, { recursive: true });
  const temporary = join(
    layout.dispatch.tmp,
    `${id}.${process.pid}.${nodeCrypto().randomBytes(6).toString("hex")}.json`,
  );
  const handle = await open(temporary, "wx", 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(document, null, 2)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await publish(temporary, target, id);
  } finally {
    await rm(temporary, { force: true });
  }
  return { id, path: target, document };
}

/**
 * A dispatch as it is handed over, by file or by the daemon's service API: any stale
 * `source_signature` dropped, `created_at` set to now when missing, checked against the
 * dispatch schema, then signed when a `secret` is given. Throws a `ContractError` naming the
 * field and rule when the document is not a dispatch.
 */
export function prepareDispatch(
  dispatch: DispatchInput,
  options: { secret?: string | Buffer; now?: Date } = {},
): Record<string, unknown> {
  const source = typeof dispatch.id === "string" ? `dispatch ${dispatch.id}` : "dispatch";
  const { source_signature: _stale, ...unsigned } = dispatch as Record<string, unknown>;
  const withTime: Record<string, unknown> = {
    ...unsigned,
    created_at: unsigned.created_at ?? (options.now ?? new Date()).toISOString(),
  };
  parseValue("dispatch", withTime, { source });
  return options.secret === undefined ? withTime : withSignature(withTime, options.secret);
}

/**
 * Moves the finished temporary file into place without ever replacing a file: `link()`
 * fails with EEXIST where `rename()` would overwrite silently. File systems without hard
 * links fall back to a checked rename.
 */
async function publish(temporary: string, target: string, id: string): Promise<void> {
  try {
    await link(temporary, target);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST") throw duplicate(id, target);
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP" && code !== "ENOSYS") throw error;
    if (await exists(target)) throw duplicate(id, target);
    await rename(temporary, target);
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
}

function duplicate(id: string, path: string): ContractError {
  return new ContractError({
    kind: "dispatch",
    source: path,
    issues: [
      {
        path: "id",
        rule: "unique",
        message: `a dispatch with id ${JSON.stringify(id)} already exists; choose a new id`,
      },
    ],
  });
}

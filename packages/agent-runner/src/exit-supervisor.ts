import { readFileSync } from "node:fs";

/**
 * How an agent ended, as its supervisor wrote it (see {@link SUPERVISOR_SOURCE}): the agent's
 * exit code or signal and when, with the size of the output copy it kept. `stopped` names a
 * signal the supervisor itself was sent (a cancel, a timeout, recovery stopping an orphan): the
 * agent did not end on its own then, so the record says how it was stopped, not how it finished.
 */
export interface SupervisedExit {
  exit_code: number | null;
  signal: NodeJS.Signals | null;
  ended_at: string;
  stopped?: NodeJS.Signals;
  /** The agent program could not be started. */
  spawn_error?: string;
  stream_bytes: number;
  stream_truncated: boolean;
  stream_error?: string;
}

/**
 * The supervisor: a small Node program (run with `node -e`, so it needs no file of its own) that
 * starts the agent as its child, in its own process group and session, and outlives the program
 * that started it. It copies the agent's output to the stream file itself and passes it on
 * through its own stdout and stderr (once nobody reads them, it keeps only the copy, so the agent
 * is never cut off by a broken pipe), and when the agent ends writes how it ended to the exit
 * file: whole (a temporary file, synced, renamed) or not at all. A supervisor killed outright
 * writes nothing; one sent a catchable signal lets the agent (in the same group, so signalled too)
 * end and records the signal it got as `stopped`. It then waits until its reader has taken all
 * the output it passed on (a reader that is gone is not waited for: the copy has it all) and
 * ends as the agent did: the same code, or the same signal.
 *
 * Arguments: exit file, stream file ("" for none), stream byte limit, program, its arguments.
 */
export const SUPERVISOR_SOURCE = String.raw`
"use strict";
const { spawn } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const [exitFile, streamFile, limitText, file, ...args] = process.argv.slice(1);
let stopped;
let readerGone = false;
process.stdout.on("error", () => { readerGone = true; });
process.stderr.on("error", () => {});
const limit = Number(limitText);
let copy;
let bytes = 0;
let truncated = false;
let streamError;
if (streamFile) {
  try { copy = fs.openSync(streamFile, "w", 0o600); } catch (error) { streamError = error.message; truncated = true; }
}
const keep = (chunk) => {
  if (copy === undefined || truncated) return;
  const piece = chunk.length <= limit - bytes ? chunk : chunk.subarray(0, Math.max(0, limit - bytes));
  if (piece.length < chunk.length) truncated = true;
  try {
    fs.writeSync(copy, piece);
    bytes += piece.length;
  } catch (error) {
    streamError = error.message;
    truncated = true;
  }
};
// Output is passed on as it comes, without waiting for its reader: the copy is kept at the
// agent's pace whatever the reader's, and what the reader has not taken yet waits here.
let received = 0;
const pass = (stream, chunk) => {
  if (stream === process.stdout && readerGone) return;
  try { stream.write(chunk); } catch { if (stream === process.stdout) readerGone = true; }
};
const record = (fields) => {
  const text = JSON.stringify({ ...fields, ended_at: new Date().toISOString(), ...(stopped ? { stopped } : {}),
    stream_bytes: bytes, stream_truncated: truncated, ...(streamError ? { stream_error: streamError } : {}) }) + "\n";
  const temporary = exitFile + ".tmp-" + process.pid;
  try {
    const descriptor = fs.openSync(temporary, "w", 0o600);
    fs.writeSync(descriptor, text);
    fs.fsyncSync(descriptor);
    fs.closeSync(descriptor);
    fs.renameSync(temporary, exitFile);
    const folder = fs.openSync(path.dirname(exitFile), "r");
    try { fs.fsyncSync(folder); } finally { fs.closeSync(folder); }
  } catch {
    try { fs.rmSync(temporary, { force: true }); } catch {}
  }
};
// Written output is only handed to the kernel when the write returns; what its reader has not
// taken yet still sits in this process, so the end waits for it, unless the reader is gone.
const flushed = (stream) => new Promise((resolve) => {
  if (stream.destroyed || stream.writableLength === 0 || (stream === process.stdout && readerGone)) return resolve();
  stream.once("error", () => resolve());
  stream.once("close", () => resolve());
  stream.write("", () => resolve());
});
const child = spawn(file, args, { stdio: ["inherit", "pipe", "pipe"] });
// Caught only from here on: a stop signal sent to the group before the agent was in it would
// otherwise be caught and noted while the agent, started after it, never got it and ran on.
// Before this line it ends the supervisor outright, and with it the agent, already in its group.
for (const name of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(name, () => { stopped = stopped || name; });
child.stdout.on("data", (chunk) => { received += 1; keep(chunk); pass(process.stdout, chunk); });
child.stderr.on("data", (chunk) => { received += 1; pass(process.stderr, chunk); });
let ended = false;
const end = (code, signal, spawnError) => {
  if (ended) return;
  ended = true;
  if (copy !== undefined) { try { fs.fsyncSync(copy); fs.closeSync(copy); } catch {} }
  record({ exit_code: code, signal, ...(spawnError ? { spawn_error: spawnError } : {}) });
  Promise.all([flushed(process.stdout), flushed(process.stderr)]).then(() => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    }
    process.exit(code ?? 1);
  });
};
child.once("error", (error) => {
  if (child.pid === undefined) {
    pass(process.stderr, "Could not start " + file + ": " + error.message + "\n");
    end(127, null, error.message);
  }
});
child.once("exit", (code, signal) => {
  // Output a leftover of the agent holds open is not waited for long (it is stopped anyway), but
  // the end comes only once two seconds passed with nothing new, and each wait ends with a look
  // at the pipes: a timer runs before the pipes are read, so on a busy machine a late one would
  // otherwise count output still unread as none.
  let closed = false;
  const finish = () => { if (!closed) { closed = true; end(code, signal); } };
  child.once("close", finish);
  let seen = received;
  const quiet = () => {
    setTimeout(() => setImmediate(() => {
      if (closed) return;
      if (received !== seen) { seen = received; quiet(); } else finish();
    }), 2000).unref();
  };
  quiet();
});
`;

/** The supervisor's record, or undefined when there is none or it cannot be read. */
export function readSupervisedExit(file: string): SupervisedExit | undefined {
  try {
    const record = JSON.parse(readFileSync(file, "utf8")) as SupervisedExit;
    return typeof record.ended_at === "string" && "exit_code" in record && "signal" in record
      ? record
      : undefined;
  } catch {
    return undefined;
  }
}

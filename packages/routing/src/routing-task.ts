/**
 * What routing knows about a task. Every field is optional; a route key whose field the
 * task does not give does not hold (a route about `calendar/*` never applies to a task
 * that names no files).
 */
export interface RoutingTask {
  /** gstack project slug, e.g. `acme-baku`. */
  project?: string;
  /** Kind of work, e.g. `security`, `shipping`. Compared without regard to case. */
  task_type?: string;
  /** Paths the task touches, relative to the project folder (`./` and `\` are normalised). */
  files?: readonly string[];
  /** Branch the work happens on. */
  branch?: string;
  /** The runtime or agent asking, e.g. `gstack`, `wintermute`. */
  agent?: string;
}

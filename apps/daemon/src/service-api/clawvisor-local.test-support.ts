import { type ChildProcess, spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import { parse } from "yaml";

/**
 * clawvisor-local's rules for a `type: server` service, as its local adapter guide states
 * them, for tests: read `service.yaml`, start the server with `CLAWVISOR_SOCKET` set, poll the
 * health path until 200 within `startup_timeout`, then turn each action into an HTTP request
 * (method and path from the action, `{{param}}` in the body JSON-escaped, parameters the body
 * does not use sent as query parameters), 2xx meaning success and output cut at 1 MB.
 */

interface ManifestParam {
  name: string;
  type?: string;
  required?: boolean;
  default?: string;
}

interface ManifestAction {
  id: string;
  method?: string;
  path: string;
  body?: string;
  body_format?: "json" | "text";
  timeout?: string;
  headers?: Record<string, string>;
  params?: ManifestParam[];
}

export interface ServiceManifest {
  id?: string;
  name: string;
  type?: string;
  start: string | string[];
  startup?: "lazy" | "eager";
  startup_timeout?: number;
  health_check?: string;
  env?: Record<string, string>;
  working_dir?: string;
  headers?: Record<string, string>;
  actions: ManifestAction[];
}

export interface ActionResult {
  success: boolean;
  status: number;
  /** The body as JSON when it parses, else the text. */
  body: unknown;
  truncated: boolean;
  /** The request as it was sent, for assertions. */
  sent: { method: string; path: string; body?: string };
}

const MAX_OUTPUT = 1024 * 1024;

/** Go durations as the manifest writes them (`30s`, `2m`, `1m30s`). */
export function parseGoDuration(text: string): number {
  let total = 0;
  let rest = text;
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  while (rest.length > 0) {
    const match = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)/.exec(rest);
    if (!match?.[1] || !match[2]) throw new Error(`not a Go duration: ${text}`);
    total += Number(match[1]) * (unit[match[2]] ?? 0);
    rest = rest.slice(match[0].length);
  }
  return total;
}

export class ClawvisorLocal {
  private child?: ChildProcess;
  private output = "";
  readonly socketPath: string;

  private constructor(
    readonly manifest: ServiceManifest,
    readonly serviceDir: string,
    runDir: string,
  ) {
    this.socketPath = join(runDir, `${manifest.id ?? "service"}.sock`);
  }

  /** Reads and checks `service.yaml` the way the daemon's discovery does. */
  static async load(serviceDir: string, runDir: string): Promise<ClawvisorLocal> {
    const manifest = parse(await readFile(join(serviceDir, "service.yaml"), "utf8")) as ServiceManifest;
    if (!manifest.name) throw new Error("service.yaml: name is required");
    if (manifest.type !== "server") throw new Error("service.yaml: this emulator runs server services only");
    if (!manifest.start || (Array.isArray(manifest.start) && manifest.start.length === 0)) {
      throw new Error("service.yaml: start is required for a server service");
    }
    const ids = new Set<string>();
    for (const action of manifest.actions ?? []) {
      if (!action.id || !action.path) throw new Error("service.yaml: every action needs an id and a path");
      if (ids.has(action.id)) throw new Error(`service.yaml: action ${action.id} appears twice`);
      ids.add(action.id);
      for (const param of action.params ?? []) {
        if (param.required && param.default !== undefined) {
          throw new Error(`service.yaml: ${action.id}.${param.name} cannot be required and have a default`);
        }
      }
    }
    return new ClawvisorLocal(manifest, serviceDir, runDir);
  }

  /** Starts the server as the manifest says and waits for its health check to answer 200. */
  async start(extraEnv: Record<string, string> = {}): Promise<void> {
    const { manifest } = this;
    const argv = Array.isArray(manifest.start) ? manifest.start : manifest.start.split(/\s+/).filter(Boolean);
    const [program, ...args] = argv;
    if (!program) throw new Error("service.yaml: empty start command");
    this.child = spawn(program, args, {
      cwd: manifest.working_dir ? join(this.serviceDir, manifest.working_dir) : this.serviceDir,
      env: {
        ...process.env,
        ...extraEnv,
        ...manifest.env,
        CLAWVISOR_SOCKET: this.socketPath,
        CLAWVISOR_SERVICE_ID: manifest.id ?? "service",
        CLAWVISOR_SERVICE_DIR: this.serviceDir,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child.stdout?.on("data", (chunk: Buffer) => {
      this.output += chunk.toString();
    });
    this.child.stderr?.on("data", (chunk: Buffer) => {
      this.output += chunk.toString();
    });
    const deadline = Date.now() + (manifest.startup_timeout ?? 10) * 1000;
    const health = manifest.health_check ?? "/health";
    for (;;) {
      const answer = await this.send("GET", health, undefined, {}, 2000).catch(() => undefined);
      if (answer?.status === 200) return;
      if (this.child.exitCode !== null) throw new Error(`the service exited at start: ${this.output}`);
      if (Date.now() > deadline) throw new Error(`the health check did not pass in time: ${this.output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** What the server printed so far. */
  get log(): string {
    return this.output;
  }

  /** Runs one action with the given parameters, as clawvisor-local would. */
  async call(
    actionId: string,
    params: Record<string, string | number | boolean> = {},
  ): Promise<ActionResult> {
    const action = this.manifest.actions.find((candidate) => candidate.id === actionId);
    if (!action) throw new Error(`unknown action ${actionId}`);
    const values = new Map<string, string>();
    for (const param of action.params ?? []) {
      const given = params[param.name];
      if (given !== undefined) values.set(param.name, String(given));
      else if (param.default !== undefined) values.set(param.name, param.default);
      else if (param.required) throw new Error(`missing required parameter ${param.name}`);
    }
    const format = action.body_format ?? (action.body !== undefined ? "json" : "text");
    let body: string | undefined;
    const used = new Set<string>();
    if (action.body !== undefined) {
      body = action.body;
      for (const [name, value] of values) {
        const placeholder = `{{${name}}}`;
        if (!body.includes(placeholder)) continue;
        used.add(name);
        const inserted = format === "json" ? JSON.stringify(value).slice(1, -1) : value;
        body = body.split(placeholder).join(inserted);
      }
    }
    const query = new URLSearchParams();
    for (const [name, value] of values) if (!used.has(name)) query.append(name, value);
    const path = query.size > 0 ? `${action.path}?${query.toString()}` : action.path;
    const method = (action.method ?? "GET").toUpperCase();
    const headers = { ...this.manifest.headers, ...action.headers };
    const answer = await this.send(method, path, body, headers, parseGoDuration(action.timeout ?? "30s"));
    return { ...answer, sent: { method, path, ...(body !== undefined ? { body } : {}) } };
  }

  private send(
    method: string,
    path: string,
    body: string | undefined,
    headers: Record<string, string>,
    timeoutMs: number,
  ): Promise<Omit<ActionResult, "sent">> {
    return new Promise((resolve, reject) => {
      const req = request(
        {
          socketPath: this.socketPath,
          method,
          path,
          headers: {
            ...headers,
            ...(body !== undefined
              ? { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) }
              : {}),
          },
          timeout: timeoutMs,
        },
        (response) => {
          const chunks: Buffer[] = [];
          let size = 0;
          let truncated = false;
          response.on("data", (chunk: Buffer) => {
            if (size + chunk.length > MAX_OUTPUT) {
              chunks.push(chunk.subarray(0, MAX_OUTPUT - size));
              size = MAX_OUTPUT;
              truncated = true;
              return;
            }
            size += chunk.length;
            chunks.push(chunk);
          });
          response.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            let parsed: unknown = text;
            try {
              parsed = JSON.parse(text);
            } catch {}
            const status = response.statusCode ?? 0;
            resolve({ success: status >= 200 && status < 300, status, body: parsed, truncated });
          });
        },
      );
      req.on("timeout", () => req.destroy(new Error(`action timed out after ${timeoutMs} ms`)));
      req.on("error", reject);
      req.end(body);
    });
  }

  /** Stops the server as clawvisor-local does: SIGTERM. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }
}

import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import {
  assertSafeName,
  ContractError,
  type LearningType,
  learningTypeSchema,
  projectSlug,
  resolveGstackHome,
  resolveOpenClawWorkspace,
} from "@gstack/contracts";
import { LearningsError } from "./errors";

export { commonArgs } from "./cli-args";

function gitOrigin(folder: string): string | undefined {
  try {
    return execFileSync("git", ["-C", folder, "remote", "get-url", "origin"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    return undefined;
  }
}

function gitTop(folder: string): string | undefined {
  try {
    return execFileSync("git", ["-C", folder, "rev-parse", "--show-toplevel"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    return undefined;
  }
}

/** Resolves the two roots and the project from the arguments and the environment. */
export function resolveTargets(args: { root?: string; workspace?: string; project?: string }) {
  const root = args.root ? resolve(args.root) : resolveGstackHome(process.env);
  const workspace = args.workspace ? resolve(args.workspace) : resolveOpenClawWorkspace(process.env);
  let project = args.project;
  if (project === undefined || project === "") {
    const folder = gitTop(process.cwd()) ?? process.cwd();
    project = projectSlug({ folder, originUrl: gitOrigin(folder), env: process.env });
  }
  try {
    assertSafeName(project, "project");
  } catch {
    throw new LearningsError("invalid-argument", `--project "${project}" is not a gstack project slug`);
  }
  return { root, workspace, project };
}

/** Checks `--type`. */
export function parseTypeArg(value: string | undefined): LearningType | undefined {
  if (value === undefined || value === "") return undefined;
  const parsed = learningTypeSchema.safeParse(value);
  if (!parsed.success) {
    throw new LearningsError(
      "invalid-argument",
      `--type must be one of ${learningTypeSchema.options.join(", ")}, got "${value}"`,
    );
  }
  return parsed.data;
}

/** Checks a positive whole-number argument such as `--limit`. */
export function parseCountArg(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === "") return fallback;
  if (!/^\d+$/.test(value))
    throw new LearningsError("invalid-argument", `--${name} must be a whole number, got "${value}"`);
  return Number(value);
}

/** One readable line for an error, without a stack. */
export function errorLine(error: unknown): string {
  if (ContractError.isInstance(error)) return error.message.split("\n").join(" ");
  if (error instanceof Error) return (error.message.split("\n")[0] ?? "").replace(/\u001b\[[0-9;]*m/g, "");
  return String(error);
}

import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  judgeOpenClaw,
  NEWEST_TESTED_OPENCLAW,
  OLDEST_TESTED_OPENCLAW,
  openclawVersionIn,
  TESTED_OPENCLAW_TEXT,
} from "@gstack/contracts";
import { findOnPath } from "../environment";
import type { DoctorCheck } from "./doctor-check";
import { type DoctorContext, output } from "./doctor-context";

// The checks of what the daemon works with beside itself: the OpenClaw on PATH, the gstack
// plugin in it, and the gstack skills its agents run.

/**
 * The OpenClaw on PATH against the versions the gstack plugin is tested with (the only ones it
 * declares): one of them is fine; a newer or other one loads the plugin on an untried plugin
 * API (OpenClaw documents them all as experimental); one older than the oldest does not load it.
 */
export async function checkOpenClaw(context: DoctorContext): Promise<DoctorCheck> {
  const supported = `the gstack plugin supports OpenClaw ${TESTED_OPENCLAW_TEXT}, the versions it is tested with`;
  const install = `npm install -g openclaw@${NEWEST_TESTED_OPENCLAW}, then restart the gateway`;
  const found = await findOnPath("openclaw", context.env);
  if (!found) return { name: "openclaw", status: "skip", detail: `openclaw is not on PATH; ${supported}` };
  const printed = await output(found, ["--version"], context.env);
  const { standing, version } = judgeOpenClaw(openclawVersionIn(printed ?? ""));
  switch (standing) {
    case "tested":
      return { name: "openclaw", status: "ok", detail: `OpenClaw ${version} (${found}); ${supported}` };
    case "untested":
      return {
        name: "openclaw",
        status: "warn",
        detail: `OpenClaw ${version} (${found}) is outside the versions the gstack plugin is tested with (${TESTED_OPENCLAW_TEXT}): the plugin loads, on a plugin API it was not tried with`,
        fix: `${install} (or, once there is one, install a gstack plugin tested with ${version})`,
      };
    case "older":
      return {
        name: "openclaw",
        status: "fail",
        detail: `OpenClaw ${version} (${found}) is older than ${OLDEST_TESTED_OPENCLAW}, the oldest the gstack plugin supports (${TESTED_OPENCLAW_TEXT}): OpenClaw does not load it`,
        fix: install,
      };
    default:
      return {
        name: "openclaw",
        status: "warn",
        detail: `\`${found} --version\` ${printed?.trim() ? `printed no version (${printed.trim().split("\n")[0]})` : "failed"}; ${supported}`,
        fix: `reinstall OpenClaw: ${install}`,
      };
  }
}

/** The gstack plugin, as OpenClaw lists it (only when `openclaw` is on PATH). */
export async function checkPlugin(context: DoctorContext): Promise<DoctorCheck> {
  if (!(await findOnPath("openclaw", context.env))) {
    return { name: "openclaw-plugin", status: "skip", detail: "openclaw is not on PATH" };
  }
  const listed = await output("openclaw", ["plugins", "list", "--json"], context.env);
  const entry = (() => {
    try {
      const stack: unknown[] = [JSON.parse(listed ?? "null")];
      while (stack.length > 0) {
        const value = stack.pop();
        if (Array.isArray(value)) stack.push(...value);
        else if (value && typeof value === "object") {
          const record = value as Record<string, unknown>;
          if (record.id === "gstack") return record;
          stack.push(...Object.values(record));
        }
      }
    } catch {}
    return undefined;
  })();
  if (!entry) {
    return {
      name: "openclaw-plugin",
      status: "fail",
      detail: "OpenClaw has no gstack plugin",
      fix: "openclaw plugins install ~/.local/share/gstack/gstack-openclaw-plugin-*.tgz --accept-capabilities && openclaw plugins enable gstack",
    };
  }
  const enabled = entry.enabled !== false && entry.status !== "disabled";
  return enabled
    ? { name: "openclaw-plugin", status: "ok", detail: "installed and enabled in OpenClaw" }
    : {
        name: "openclaw-plugin",
        status: "fail",
        detail: "installed but disabled",
        fix: "openclaw plugins enable gstack, then restart the gateway",
      };
}

/** The installed gstack skills: their version and whether they know the unattended session kind. */
export async function checkGstack(context: DoctorContext): Promise<DoctorCheck> {
  const folder = join(context.home, ".claude", "skills", "gstack");
  const version = (await readFile(join(folder, "VERSION"), "utf8").catch(() => undefined))?.trim();
  if (!version) {
    return {
      name: "gstack",
      status: "warn",
      detail: `no gstack at ${folder}`,
      fix: "install gstack into ~/.claude/skills/gstack (see its README) for the skills agents run",
    };
  }
  let knowsUnattended = false;
  for (const script of ["gstack-skill-start", "gstack-session-kind"]) {
    const text = await readFile(join(folder, "bin", script), "utf8").catch(() => "");
    if (text.includes("unattended")) knowsUnattended = true;
  }
  return knowsUnattended
    ? {
        name: "gstack",
        status: "ok",
        detail: `gstack ${version} at ${folder}, with the unattended session kind`,
      }
    : {
        name: "gstack",
        status: "warn",
        detail: `gstack ${version} at ${folder} does not know the unattended session kind: its skills may stop to ask`,
        fix: `update gstack (cd ${folder} && git pull && ./setup)`,
      };
}

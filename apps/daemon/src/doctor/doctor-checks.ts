import { access, constants, mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultAcpCommands, defaultAgentCommands, probeAcpAgent } from "@gstack/agent-runner";
import { type DispatchSettings, expandHome, targetAgents } from "@gstack/contracts";
import { isSupportedNode, SUPPORTED_NODE_RANGE } from "@gstack/contracts/node-support";
import {
  checkTrust,
  findRepository,
  howItLeads,
  loadSettings,
  readStatus,
  repositoryName,
} from "@gstack/daemon-client";
import { findOnPath } from "../environment";
import { serviceFiles } from "../service-install/service-files";
import type { DoctorCheck } from "./doctor-check";
import { type DoctorContext, present } from "./doctor-context";
import { checkGstack, checkOpenClaw, checkPlugin } from "./openclaw-checks";

export type { DoctorContext } from "./doctor-context";

export function checkNode(): DoctorCheck {
  const version = process.versions.node;
  return isSupportedNode(version)
    ? { name: "node", status: "ok", detail: `Node.js ${version} (${process.execPath})` }
    : {
        name: "node",
        status: "fail",
        detail: `Node.js ${version} is older than ${SUPPORTED_NODE_RANGE}`,
        fix: "install Node.js 24 from https://nodejs.org, or reinstall with `./dev install --prefix DIR`",
      };
}

/**
 * Where each agent CLI keeps the key or login a service can use. A service does not read the
 * shell's profile, so a key exported there is not seen by the daemon the service manager starts.
 */
const agentLogins: Record<string, { env: string[]; files: string[]; login: string }> = {
  claude: {
    env: ["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"],
    files: [".claude/.credentials.json"],
    login: "run `claude` once as this user and type /login (macOS keeps it in the login keychain)",
  },
  codex: {
    env: ["OPENAI_API_KEY", "CODEX_API_KEY"],
    files: [".codex/auth.json"],
    login: "run `codex login`",
  },
  gemini: {
    env: ["GEMINI_API_KEY", "GOOGLE_API_KEY"],
    files: [".gemini/oauth_creds.json"],
    login: "run `gemini` once and sign in",
  },
  cursor: { env: ["CURSOR_API_KEY"], files: [".cursor/cli-config.json"], login: "run `cursor-agent login`" },
};

export async function checkAgents(
  context: DoctorContext,
  settings: DispatchSettings | undefined,
): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  const agents = settings?.agents ?? {};
  // The built-in agents and every other configured one that runs as a command line (an ACP
  // agent is started and asked `initialize` by checkAcpAgents).
  const others = Object.entries(agents)
    .filter(
      ([name, config]) => !(targetAgents as readonly string[]).includes(name) && config?.protocol !== "acp",
    )
    .map(([name]) => name);
  for (const name of [...targetAgents, ...others]) {
    const configured = agents[name]?.command[0];
    const program =
      configured ??
      (name === "claude"
        ? "claude"
        : (defaultAgentCommands[name as keyof typeof defaultAgentCommands]?.command[0] ?? name));
    const found = await findOnPath(program, context.env);
    if (!found) {
      checks.push(
        name === "claude" || configured
          ? {
              name: `agent:${name}`,
              status: "fail",
              detail: `'${program}' is not on PATH`,
              fix:
                name === "claude"
                  ? "install Claude Code (https://docs.claude.com/claude-code) or set dispatch.agents in config.yaml"
                  : `install ${program} or remove dispatch.agents.${name} from config.yaml`,
            }
          : {
              name: `agent:${name}`,
              status: "skip",
              detail: `'${program}' is not installed; its dispatches are refused`,
            },
      );
      continue;
    }
    const login = agentLogins[name];
    const fromEnv = login?.env.find((variable) => context.env[variable]);
    const fromFile = await (async () => {
      for (const file of login?.files ?? [])
        if (await present(join(context.home, file))) return join(context.home, file);
      return undefined;
    })();
    if (fromFile) {
      checks.push({ name: `agent:${name}`, status: "ok", detail: `${found}; signed in (${fromFile})` });
    } else if (fromEnv) {
      checks.push({
        name: `agent:${name}`,
        status: "warn",
        detail: `${found}; authenticates with ${fromEnv} from this shell, which the service does not read`,
        fix: `${login?.login}, so the service finds the login in ${join(context.home, login?.files[0] ?? "")}`,
      });
    } else {
      checks.push({
        name: `agent:${name}`,
        status: context.platform === "darwin" && name === "claude" ? "warn" : "fail",
        detail: `${found}; no key or login found for it (${[...(login?.env ?? []), ...(login?.files.map((file) => `~/${file}`) ?? [])].join(", ")})`,
        fix: login?.login ?? `sign ${name} in as this user`,
      });
    }
  }
  return checks;
}

export async function checkConfig(
  context: DoctorContext,
): Promise<{ checks: DoctorCheck[]; settings?: DispatchSettings }> {
  let settings: DispatchSettings;
  try {
    ({ settings } = await loadSettings(context.layout));
  } catch (error) {
    const message = (error as Error).message.split("\n").join("; ");
    return {
      checks: [{ name: "config", status: "fail", detail: message, fix: `correct ${context.layout.config}` }],
    };
  }
  const checks: DoctorCheck[] = [];
  const repos = settings.trusted_repos ?? [];
  if (repos.length === 0) {
    checks.push({
      name: "config",
      status: "fail",
      detail: `no trusted repositories in ${context.layout.config}: every dispatch is refused`,
      fix: `add your project folders under dispatch.trusted_repos in ${context.layout.config}`,
    });
  } else {
    checks.push({
      name: "config",
      status: "ok",
      detail: `${repos.length} trusted repositor${repos.length === 1 ? "y" : "ies"}`,
    });
  }
  checks.push(...(await checkTrustedRepos(repos, context)));
  return { checks, settings };
}

/**
 * Each trusted folder (a glob is left alone): it exists, lies in a git repository git will use,
 * and that repository is trusted too. A folder whose `.git` leads into a repository elsewhere
 * (a `.git` file or link, a `commondir`, `core.worktree`, or a folder inside a larger
 * repository) has every dispatch refused: trust follows the repository.
 */
async function checkTrustedRepos(repos: readonly string[], context: DoctorContext): Promise<DoctorCheck[]> {
  const env = { ...context.env, HOME: context.home };
  const checks: DoctorCheck[] = [];
  for (const repo of repos) {
    const name = `trusted:${repo}`;
    const folder = expandHome(repo, env);
    if (/[*?[\]{}]/.test(folder)) continue;
    if (!(await present(folder))) {
      checks.push({
        name,
        status: "fail",
        detail: "does not exist",
        fix: `remove it from dispatch.trusted_repos or \`git init ${repo}\``,
      });
      continue;
    }
    const found = await findRepository(folder).catch(() => undefined);
    if (!found || found.kind === "none") {
      checks.push({
        name,
        status: "fail",
        detail: "is not a git repository",
        fix: `remove it from dispatch.trusted_repos or \`git init ${repo}\``,
      });
      continue;
    }
    if (found.kind === "unusable") {
      checks.push({
        name,
        status: "fail",
        detail: `is in a git repository git refuses to use (${found.reason})`,
        fix: `repair or remove the .git that leads there, or remove ${repo} from dispatch.trusted_repos`,
      });
      continue;
    }
    const verdict = await checkTrust(folder, repos, { env });
    if (verdict.ok || !verdict.repository) continue;
    const toTrust = verdict.refusal.toTrust ?? [repositoryName(verdict.repository)];
    checks.push({
      name,
      status: "fail",
      detail: `belongs to the git repository ${repositoryName(verdict.repository)}, which is not trusted (${howItLeads(found.folder, verdict.repository)}): every dispatch for it is refused`,
      fix: `add ${toTrust.join(" and ")} to dispatch.trusted_repos in ${context.layout.config} if you trust that repository, or remove ${repo} from it`,
    });
  }
  return checks;
}

/** Secrets and tokens must be readable by their owner only; a looser file is refused by the daemon. */
export async function checkSecrets(context: DoctorContext): Promise<DoctorCheck[]> {
  const { layout } = context;
  const checks: DoctorCheck[] = [];
  for (const path of [
    layout.dispatchSecret,
    layout.callbackSecret,
    layout.openclawHooksToken,
    layout.apiToken,
    layout.clawvisorToken,
  ]) {
    const info = await stat(path).catch(() => undefined);
    if (!info) continue;
    const name = `secret:${path.slice(layout.root.length + 1)}`;
    const mode = info.mode & 0o777;
    checks.push(
      mode & 0o077
        ? {
            name,
            status: "fail",
            detail: `${path} has mode ${mode.toString(8).padStart(4, "0")}; others can read it`,
            fix: `chmod 600 ${path}`,
          }
        : { name, status: "ok", detail: `${path} is readable by you only` },
    );
  }
  return checks;
}

export async function checkStateRoot(context: DoctorContext): Promise<DoctorCheck> {
  const root = context.layout.root;
  if (!(await present(root))) {
    return {
      name: "state",
      status: "warn",
      detail: `${root} does not exist yet`,
      fix: `mkdir -p ${root} (the daemon makes it at its first start)`,
    };
  }
  try {
    await access(root, constants.W_OK);
    return { name: "state", status: "ok", detail: `${root} is writable` };
  } catch {
    return {
      name: "state",
      status: "fail",
      detail: `${root} is not writable by you`,
      fix: `chown -R $USER ${root}`,
    };
  }
}

export async function checkDaemon(context: DoctorContext): Promise<DoctorCheck> {
  const status = await readStatus(context.layout).catch(() => undefined);
  if (status?.alive && status.heartbeat) {
    return {
      name: "daemon",
      status: "ok",
      detail: `running (pid ${status.heartbeat.pid}, heartbeat ${status.heartbeat.ts})`,
    };
  }
  return {
    name: "daemon",
    status: "warn",
    detail: status?.heartbeat
      ? `not running (last heartbeat ${status.heartbeat.ts})`
      : "not running (no heartbeat)",
    fix: "gstack-dispatch install (as a service) or gstack-dispatch run (in a terminal)",
  };
}

/** The service unit exists and the Node and script it starts are still there. */
export async function checkService(context: DoctorContext): Promise<DoctorCheck> {
  const files = serviceFiles(context.platform, { ...context.env, HOME: context.home });
  const text = await readFile(files.unit, "utf8").catch(() => undefined);
  if (text === undefined) {
    return {
      name: "service",
      status: "warn",
      detail: `no service unit at ${files.unit}`,
      fix: "gstack-dispatch install",
    };
  }
  const started =
    context.platform === "linux"
      ? (/^ExecStart=(.*) run$/m.exec(text)?.[1] ?? "")
          .match(/"(?:[^"\\]|\\.)*"|\S+/g)
          ?.map((part) => part.replace(/^"|"$/g, ""))
      : [
          ...(/<key>ProgramArguments<\/key>\s*<array>([\s\S]*?)<\/array>/.exec(text)?.[1] ?? "").matchAll(
            /<string>([^<]*)<\/string>/g,
          ),
        ]
          .map((match) => match[1] ?? "")
          .slice(0, 2);
  const missing: string[] = [];
  for (const path of started ?? []) if (!(await present(path))) missing.push(path);
  return missing.length > 0
    ? {
        name: "service",
        status: "fail",
        detail: `${files.unit} starts ${missing.join(" and ")}, which no longer exist${missing.length === 1 ? "s" : ""}`,
        fix: "run `gstack-dispatch install` again from the commands you use now",
      }
    : { name: "service", status: "ok", detail: `${files.unit} starts ${(started ?? []).join(" ")}` };
}

/**
 * Each agent run over the Agent Client Protocol (a configured command with `protocol: acp`, or
 * Gemini CLI's default ACP mode when `gemini` is installed) is started in a scratch folder with
 * its configured environment and must answer `initialize`.
 */
export async function checkAcpAgents(
  context: DoctorContext,
  settings: DispatchSettings | undefined,
): Promise<DoctorCheck[]> {
  const configured = settings?.agents ?? {};
  const agents: [string, { command: string[]; env?: Record<string, string> }][] = [];
  for (const [name, config] of Object.entries(configured)) {
    if (config?.protocol === "acp") agents.push([name, config]);
  }
  for (const [name, config] of Object.entries(defaultAcpCommands)) {
    if (name in configured || !(name in defaultAgentCommands)) continue;
    if (await findOnPath(config.command[0] ?? name, context.env)) agents.push([name, config]);
  }
  const checks: DoctorCheck[] = [];
  for (const [name, config] of agents) {
    const folder = await mkdtemp(join(tmpdir(), "gstack-doctor-acp-"));
    try {
      const probe = await probeAcpAgent({
        command: config.command,
        cwd: folder,
        env: { ...context.env, ...config.env },
        timeoutMs: 30_000,
      });
      checks.push(
        probe.ok
          ? {
              name: `acp:${name}`,
              status: "ok",
              detail: `answers initialize (${[probe.name, probe.version].filter(Boolean).join(" ") || config.command[0]}, protocol ${probe.protocolVersion}${probe.loadSession ? ", can load sessions" : ", cannot load sessions: a retry after a crash starts anew"})`,
            }
          : {
              name: `acp:${name}`,
              status: "fail",
              detail: `'${config.command.join(" ")}' does not answer initialize: ${probe.error}`,
              fix: `install the agent, or fix dispatch.agents.${name} in config.yaml (its command must start an ACP agent on stdin and stdout)`,
            },
      );
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  }
  return checks;
}

/** Every check, in the order a person would fix them. */
export async function runDoctor(context: DoctorContext): Promise<DoctorCheck[]> {
  const config = await checkConfig(context);
  return [
    checkNode(),
    ...(await checkAgents(context, config.settings)),
    ...(await checkAcpAgents(context, config.settings)),
    ...config.checks,
    ...(await checkSecrets(context)),
    await checkStateRoot(context),
    await checkDaemon(context),
    await checkService(context),
    await checkOpenClaw(context),
    await checkPlugin(context),
    await checkGstack(context),
  ];
}

import { access, constants, readFile, stat } from "node:fs/promises";
import { homedir } from "node:os";
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import { writeJsonAtomic } from "../atomic-json";
import { type ContractorSettings, resolveContractorSettings } from "./contractor-settings";
import { ensureSidecarKey, keyFileProblem, readSidecarKey } from "./sidecar-key";

/** The plugin's id in `plugins.entries`. */
export const PLUGIN_ID = "gstack";
/** The agent the install adds. */
export const DEFAULT_CONTRACTOR_AGENT = "claude-code";
/**
 * The file secret provider (`secrets.providers.<name>`) the install registers for the key file,
 * so `openclaw.json` holds a SecretRef to the key rather than the key itself.
 */
export const CONTRACTOR_SECRET_PROVIDER = "gstack-contractor";

/** The provider's `apiKey` as the install writes it: a SecretRef to the key file. */
export function contractorKeyRef(): { source: "file"; provider: string; id: "value" } {
  return { source: "file", provider: CONTRACTOR_SECRET_PROVIDER, id: "value" };
}

/**
 * The secret provider entry for the key file. The path is written absolute: OpenClaw expands `~`
 * against `OPENCLAW_HOME` before `HOME`, which need not be the home the key was made under.
 */
function keyFileSecretProvider(keyFile: string): Json {
  return { source: "file", path: keyFile, mode: "singleValue" };
}

export interface InstallContractorOptions {
  /** `openclaw.json`. */
  configPath: string;
  /** The plugin's records folder (`<OpenClaw state>/gstack`), where the key file goes by default. */
  pluginStateDir: string;
  /** The folder Claude Code works in. */
  projectDir: string;
  agentId?: string;
  port?: number;
  claudeBinary?: string;
  /** Extra environment for Claude Code. */
  env?: Record<string, string>;
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);

async function readConfig(path: string): Promise<Json> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw error;
  }
  if (text.trim().length === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(
      `${path} is not plain JSON (${(error as Error).message}); comments and trailing commas are not rewritten here: add the entries by hand (see the plugin README) or remove them first`,
    );
  }
  if (!isObject(value)) throw new Error(`${path}: the top level must be an object`);
  return value;
}

/** The object at `path` inside `root`, created (as `{}`) where missing; refuses a non-object on the way. */
function objectAt(root: Json, path: readonly string[], file: string): Json {
  let node = root;
  for (const [index, key] of path.entries()) {
    const next = node[key];
    if (next === undefined) node[key] = {};
    else if (!isObject(next))
      throw new Error(`${file}: field ${path.slice(0, index + 1).join(".")} must be an object`);
    node = node[key] as Json;
  }
  return node;
}

function currentContractor(config: Json): Json {
  const plugins = isObject(config.plugins) ? config.plugins : {};
  const entries = isObject(plugins.entries) ? plugins.entries : {};
  const entry = isObject(entries[PLUGIN_ID]) ? entries[PLUGIN_ID] : {};
  const pluginConfig = isObject(entry.config) ? entry.config : {};
  return isObject(pluginConfig.contractor) ? pluginConfig.contractor : {};
}

/** The contractor settings `openclaw.json` describes now. */
export async function contractorSettingsOf(
  configPath: string,
  pluginStateDir: string,
): Promise<ContractorSettings> {
  return resolveContractorSettings(currentContractor(await readConfig(configPath)), pluginStateDir);
}

/**
 * Writes the contractor into `openclaw.json`: a file secret provider for the key file
 * (`secrets.providers.gstack-contractor`), the provider (`models.providers.<id>`, an
 * `openai-completions` endpoint on the sidecar whose `apiKey` is a SecretRef to that secret
 * provider, replacing the plain-text key an older install wrote), an agent whose model is it
 * (`agents.entries.<agent>`), and the sidecar's settings in the plugin's config (enabled, project
 * folder, port, agent). Everything else in the file stays as it was; running it again updates
 * the same entries. Returns the settings written.
 */
export async function installContractor(
  options: InstallContractorOptions,
): Promise<ContractorSettings & { agentId: string }> {
  const config = await readConfig(options.configPath);
  const file = options.configPath;
  const contractor = objectAt(config, ["plugins", "entries", PLUGIN_ID, "config", "contractor"], file);
  const agentId =
    options.agentId ??
    (typeof contractor.agentId === "string" ? contractor.agentId : DEFAULT_CONTRACTOR_AGENT);
  contractor.enabled = true;
  contractor.projectDir = options.projectDir;
  contractor.agentId = agentId;
  if (options.port !== undefined) contractor.port = options.port;
  if (options.claudeBinary !== undefined) contractor.claudeBinary = options.claudeBinary;
  if (options.env !== undefined) contractor.env = options.env;
  const settings = resolveContractorSettings(contractor, options.pluginStateDir);
  await ensureSidecarKey(settings.keyFile);
  const problem = await keyFileProblem(settings.keyFile);
  if (problem !== undefined) throw new Error(problem);

  const secretProviders = objectAt(config, ["secrets", "providers"], file);
  secretProviders[CONTRACTOR_SECRET_PROVIDER] = keyFileSecretProvider(settings.keyFile);
  const providers = objectAt(config, ["models", "providers"], file);
  // A whole new entry: an older install's plain-text key gives way to the reference.
  providers[settings.providerId] = {
    baseUrl: `http://${settings.host}:${settings.port}/v1`,
    apiKey: contractorKeyRef(),
    api: "openai-completions",
    models: [
      {
        id: settings.modelId,
        name: "Claude Code with gstack",
        reasoning: false,
        input: ["text"],
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        contextWindow: 200_000,
        maxTokens: 32_000,
      },
    ],
  };
  const agents = objectAt(config, ["agents", "entries"], file);
  if (contractor.keptDefault === undefined) {
    const kept = keepDefaultAgent(config, agentId, file);
    if (kept) contractor.keptDefault = kept;
  }
  const existing = isObject(agents[agentId]) ? agents[agentId] : {};
  agents[agentId] = {
    ...existing,
    name: typeof existing.name === "string" ? existing.name : "Claude Code",
    model: { primary: `${settings.providerId}/${settings.modelId}`, fallbacks: [] },
  };
  await writeJsonAtomic(file, config);
  return { ...settings, agentId };
}

/** What the install added so the agent that answered before stays the default (undone by uninstall). */
interface KeptDefault {
  agentId: string;
  /** `agents.entries.<agentId>` was added (the implicit `main` agent made explicit). */
  addedEntry?: boolean;
  /** The workspace written into that agent's entry. */
  addedWorkspace?: string;
  addedOwnership?: boolean;
  addedSystemAgent?: boolean;
}

/**
 * OpenClaw treats a lone configured agent as the default and refuses a roster of several without
 * `agents.ownership: "explicit"`; in such a roster an agent without its own workspace gets
 * `workspace-<id>`. So when the config had no agent or one, adding ours would take over the
 * person's chats or move that agent's workspace: the install names the agent that answered
 * before (`main` when none was configured) as `agents.defaults.systemAgent`, keeps its workspace
 * where it was, and sets explicit ownership. A roster that is already explicit is left alone.
 */
function keepDefaultAgent(config: Json, agentId: string, file: string): KeptDefault | undefined {
  const agents = objectAt(config, ["agents"], file);
  const entries = objectAt(config, ["agents", "entries"], file);
  if (agents.ownership === "explicit") return undefined;
  const others = Object.keys(entries).filter((id) => id !== agentId);
  if (others.length > 1) return undefined;
  const previous = others[0] ?? "main";
  const kept: KeptDefault = { agentId: previous };
  const defaults = objectAt(config, ["agents", "defaults"], file);
  if (entries[previous] === undefined) {
    entries[previous] = {};
    kept.addedEntry = true;
  }
  const entry = entries[previous];
  if (!isObject(entry)) throw new Error(`${file}: field agents.entries.${previous} must be an object`);
  if (entry.workspace === undefined) {
    const workspace =
      typeof defaults.workspace === "string"
        ? defaults.workspace
        : (process.env.OPENCLAW_WORKSPACE_DIR ?? join(dirname(file), "workspace"));
    entry.workspace = workspace;
    kept.addedWorkspace = workspace;
  }
  agents.ownership = "explicit";
  kept.addedOwnership = true;
  if (defaults.systemAgent === undefined) {
    defaults.systemAgent = { agentId: previous };
    kept.addedSystemAgent = true;
  }
  return kept;
}

/** Undoes {@link keepDefaultAgent}, leaving what the person changed since. */
function restoreDefaultAgent(config: Json, kept: unknown, removed: string[]): void {
  if (!isObject(kept) || typeof kept.agentId !== "string") return;
  const agents = isObject(config.agents) ? config.agents : undefined;
  if (!agents) return;
  const entries = isObject(agents.entries) ? agents.entries : {};
  const defaults = isObject(agents.defaults) ? agents.defaults : {};
  const entry = entries[kept.agentId];
  if (isObject(entry) && typeof kept.addedWorkspace === "string" && entry.workspace === kept.addedWorkspace) {
    delete entry.workspace;
  }
  if (kept.addedEntry === true && isObject(entry) && Object.keys(entry).length === 0) {
    delete entries[kept.agentId];
    removed.push(`agents.entries.${kept.agentId}`);
  }
  if (kept.addedOwnership === true && agents.ownership === "explicit" && Object.keys(entries).length <= 1) {
    delete agents.ownership;
    removed.push("agents.ownership");
  }
  const system = defaults.systemAgent;
  if (kept.addedSystemAgent === true && isObject(system) && system.agentId === kept.agentId) {
    delete defaults.systemAgent;
    removed.push("agents.defaults.systemAgent");
  }
  if (Object.keys(entries).length === 0) delete agents.entries;
  if (Object.keys(defaults).length === 0) delete agents.defaults;
  if (Object.keys(agents).length === 0) delete config.agents;
}

/**
 * Takes the contractor out of `openclaw.json`: the provider, the agent (only while its model is
 * still the sidecar's) and the plugin's `contractor` block. The key file stays. Returns what was removed.
 */
export async function uninstallContractor(options: {
  configPath: string;
  pluginStateDir: string;
}): Promise<string[]> {
  const config = await readConfig(options.configPath);
  const contractor = currentContractor(config);
  const settings = resolveContractorSettings(contractor, options.pluginStateDir);
  const agentId = typeof contractor.agentId === "string" ? contractor.agentId : DEFAULT_CONTRACTOR_AGENT;
  const removed: string[] = [];
  const providers =
    isObject(config.models) && isObject(config.models.providers) ? config.models.providers : undefined;
  if (providers && settings.providerId in providers) {
    delete providers[settings.providerId];
    removed.push(`models.providers.${settings.providerId}`);
  }
  const agents =
    isObject(config.agents) && isObject(config.agents.entries) ? config.agents.entries : undefined;
  const agent = agents?.[agentId];
  const primary = isObject(agent) ? (isObject(agent.model) ? agent.model.primary : agent.model) : undefined;
  if (agents && primary === `${settings.providerId}/${settings.modelId}`) {
    delete agents[agentId];
    removed.push(`agents.entries.${agentId}`);
  }
  const plugins = isObject(config.plugins) && isObject(config.plugins.entries) ? config.plugins.entries : {};
  const pluginConfig =
    isObject(plugins[PLUGIN_ID]) && isObject(plugins[PLUGIN_ID].config)
      ? plugins[PLUGIN_ID].config
      : undefined;
  restoreDefaultAgent(config, contractor.keptDefault, removed);
  const secrets = isObject(config.secrets) ? config.secrets : undefined;
  const secretProviders = secrets && isObject(secrets.providers) ? secrets.providers : undefined;
  const secretProvider = secretProviders?.[CONTRACTOR_SECRET_PROVIDER];
  if (secretProviders && isObject(secretProvider) && secretProvider.source === "file") {
    delete secretProviders[CONTRACTOR_SECRET_PROVIDER];
    removed.push(`secrets.providers.${CONTRACTOR_SECRET_PROVIDER}`);
    if (Object.keys(secretProviders).length === 0) delete (secrets as Json).providers;
    if (Object.keys(secrets as Json).length === 0) delete config.secrets;
  }
  if (pluginConfig && "contractor" in pluginConfig) {
    delete pluginConfig.contractor;
    removed.push(`plugins.entries.${PLUGIN_ID}.config.contractor`);
    const entry = plugins[PLUGIN_ID] as Json;
    if (Object.keys(pluginConfig).length === 0) delete entry.config;
  }
  // Containers the install had to create go again once empty.
  if (providers && Object.keys(providers).length === 0 && isObject(config.models)) {
    delete config.models.providers;
    if (Object.keys(config.models).length === 0) delete config.models;
  }
  if (removed.length > 0) await writeJsonAtomic(options.configPath, config);
  return removed;
}

/** `~` as OpenClaw expands it in a secret provider's path: `OPENCLAW_HOME`, then `HOME`. */
function openclawUserPath(path: string): string {
  const trimmed = path.trim();
  if (!trimmed.startsWith("~")) return resolve(trimmed);
  const home = process.env.OPENCLAW_HOME?.trim() || process.env.HOME?.trim() || homedir();
  const base = home.startsWith("~") ? home.replace(/^~/, process.env.HOME?.trim() || homedir()) : home;
  return resolve(trimmed.replace(/^~(?=$|[\\/])/, base));
}

/** The doctor's line about the provider's `apiKey`: a SecretRef to the key file passes, anything else says how to fix it. */
function keyReferenceLine(
  config: Json,
  apiKey: unknown,
  settings: ContractorSettings,
  key: string,
): DoctorLine {
  const field = `models.providers.${settings.providerId}.apiKey`;
  const fix = "run the install step again (openclaw gstack-contractor install --project <folder>)";
  if (typeof apiKey === "string") {
    return apiKey.trim() === key
      ? {
          ok: false,
          line: `${field} holds the key in plain text (agent-readable, kept in backups): ${fix} to replace it with a SecretRef to ${settings.keyFile}`,
        }
      : { ok: false, line: `${field} is not the key in ${settings.keyFile}: ${fix}` };
  }
  if (!isObject(apiKey) || apiKey.source !== "file" || typeof apiKey.provider !== "string") {
    return { ok: false, line: `${field} is not a SecretRef to ${settings.keyFile}: ${fix}` };
  }
  const secrets =
    isObject(config.secrets) && isObject(config.secrets.providers) ? config.secrets.providers : {};
  const secretProvider = secrets[apiKey.provider];
  const where = `secrets.providers.${apiKey.provider}`;
  if (
    !isObject(secretProvider) ||
    secretProvider.source !== "file" ||
    typeof secretProvider.path !== "string"
  ) {
    return { ok: false, line: `${where} (named by ${field}) is missing or not a file provider: ${fix}` };
  }
  if (secretProvider.mode !== "singleValue" || apiKey.id !== "value") {
    return {
      ok: false,
      line: `${where} must have mode "singleValue" and ${field} id "value": ${fix}`,
    };
  }
  if (openclawUserPath(secretProvider.path) !== settings.keyFile) {
    return {
      ok: false,
      line: `${where} reads ${secretProvider.path}, not the key file ${settings.keyFile}: ${fix}`,
    };
  }
  return {
    ok: true,
    line: `key ${settings.keyFile} (0600) is the provider's apiKey through the SecretRef ${where}`,
  };
}

/** One line of the doctor check. */
export interface DoctorLine {
  ok: boolean;
  line: string;
}

async function onPath(program: string): Promise<boolean> {
  const candidates = isAbsolute(program)
    ? [program]
    : (process.env.PATH ?? "").split(delimiter).map((folder) => join(folder, program));
  for (const candidate of candidates) {
    if (
      await access(candidate, constants.X_OK).then(
        () => true,
        () => false,
      )
    )
      return true;
  }
  return false;
}

/**
 * Checks the contractor's setup, one line per fact: the provider and agent in `openclaw.json`,
 * the key file (0600, a file OpenClaw's file secret provider accepts, named by the provider's
 * `apiKey` SecretRef; a plain-text key fails with the fix), the project folder, the Claude Code
 * program, and whether the sidecar answers.
 */
export async function checkContractor(options: {
  configPath: string;
  pluginStateDir: string;
}): Promise<DoctorLine[]> {
  const lines: DoctorLine[] = [];
  let config: Json;
  try {
    config = await readConfig(options.configPath);
  } catch (error) {
    return [{ ok: false, line: (error as Error).message }];
  }
  const contractor = currentContractor(config);
  const settings = resolveContractorSettings(contractor, options.pluginStateDir);
  const agentId = typeof contractor.agentId === "string" ? contractor.agentId : DEFAULT_CONTRACTOR_AGENT;
  lines.push(
    settings.enabled
      ? { ok: true, line: `contractor enabled (plugins.entries.${PLUGIN_ID}.config.contractor)` }
      : {
          ok: false,
          line: `contractor not enabled: run the install step (openclaw gstack-contractor install --project <folder>)`,
        },
  );
  const providers: Json =
    isObject(config.models) && isObject(config.models.providers) ? config.models.providers : {};
  const provider: Json | undefined = isObject(providers[settings.providerId])
    ? (providers[settings.providerId] as Json)
    : undefined;
  const expectedUrl = `http://${settings.host}:${settings.port}/v1`;
  lines.push(
    provider?.baseUrl === expectedUrl && provider.api === "openai-completions"
      ? { ok: true, line: `provider ${settings.providerId} points at ${expectedUrl}` }
      : {
          ok: false,
          line: `models.providers.${settings.providerId} missing or not pointing at ${expectedUrl} (openai-completions)`,
        },
  );
  const agents: Json =
    isObject(config.agents) && isObject(config.agents.entries) ? config.agents.entries : {};
  const agent: Json | undefined = isObject(agents[agentId]) ? (agents[agentId] as Json) : undefined;
  const primary = isObject(agent?.model) ? agent.model.primary : agent?.model;
  lines.push(
    primary === `${settings.providerId}/${settings.modelId}`
      ? { ok: true, line: `agent ${agentId} uses ${primary}` }
      : {
          ok: false,
          line: `agents.entries.${agentId} missing or its model is not ${settings.providerId}/${settings.modelId}`,
        },
  );
  let key: string | undefined;
  try {
    key = await readSidecarKey(settings.keyFile);
    const problem = key === undefined ? undefined : await keyFileProblem(settings.keyFile);
    lines.push(
      key === undefined
        ? { ok: false, line: `no key at ${settings.keyFile}: run the install step again` }
        : problem !== undefined
          ? { ok: false, line: problem }
          : keyReferenceLine(config, provider?.apiKey, settings, key),
    );
  } catch (error) {
    lines.push({ ok: false, line: (error as Error).message });
  }
  if (settings.projectDir === undefined) lines.push({ ok: false, line: "contractor.projectDir is not set" });
  else {
    const folder = await stat(settings.projectDir).then(
      (info) => info.isDirectory(),
      () => false,
    );
    lines.push(
      folder
        ? { ok: true, line: `project folder ${settings.projectDir}` }
        : { ok: false, line: `project folder ${settings.projectDir} does not exist` },
    );
  }
  lines.push(
    (await onPath(settings.claudeBinary))
      ? { ok: true, line: `Claude Code: ${settings.claudeBinary}` }
      : {
          ok: false,
          line: `${settings.claudeBinary} is not on PATH: install Claude Code or set contractor.claudeBinary`,
        },
  );
  if (key !== undefined) {
    const answer = await fetch(`${expectedUrl}/models`, {
      headers: { authorization: `Bearer ${key}` },
      signal: AbortSignal.timeout(3_000),
    }).then(
      (response) => response.status,
      () => undefined,
    );
    lines.push(
      answer === 200
        ? { ok: true, line: `sidecar answers on ${expectedUrl}` }
        : {
            ok: false,
            line: `sidecar does not answer on ${expectedUrl}${answer ? ` (HTTP ${answer})` : ""}: is the gateway running with the plugin enabled?`,
          },
    );
  }
  return lines;
}

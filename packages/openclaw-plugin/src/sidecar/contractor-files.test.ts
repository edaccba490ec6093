import { spawn } from "node:child_process";
import { once } from "node:events";
import {
  chmod,
  link,
  mkdir,
  mkdtemp,
  readFile,
  rename,
  rm,
  stat,
  symlink,
  unlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { processGroupAlive } from "@gstack/agent-runner";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkContractor, installContractor, uninstallContractor } from "./contractor-install";
import { claudeSessionExists, MAX_ENDED, SessionMap } from "./session-map";
import { authorizationMatches, ensureSidecarKey, keyFileProblem, readSidecarKey } from "./sidecar-key";
import { identityAlive, processIdentity, TurnLocks } from "./turn-locks";

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), "gstack-contractor-files-"));
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

describe("the sidecar key", () => {
  it("is made once with mode 0600, and a looser file is refused", async () => {
    const path = join(folder, "state", "contractor.key");
    const key = await ensureSidecarKey(path);
    expect(((await stat(path)).mode & 0o777).toString(8)).toBe("600");
    expect(await ensureSidecarKey(path)).toBe(key);
    expect(authorizationMatches(`Bearer ${key}`, key)).toBe(true);
    expect(authorizationMatches(`Bearer ${key}x`, key)).toBe(false);
    expect(authorizationMatches(undefined, key)).toBe(false);
    await chmod(path, 0o644);
    await expect(readSidecarKey(path)).rejects.toThrow(/readable by others \(mode 644\); run chmod 600/);
  });
});

describe("the session map", () => {
  it("keeps entries across instances and applies concurrent changes one at a time", async () => {
    const path = join(folder, "sessions.json");
    const map = new SessionMap(path);
    const entry = (id: string) => ({
      claudeSessionId: id,
      cwd: "/p",
      createdAt: "t",
      updatedAt: "t",
      turns: 1,
    });
    await Promise.all(
      Array.from({ length: 20 }, (_, index) => map.set(`agent:a:${index}`, entry(`id-${index}`))),
    );
    const again = new SessionMap(path);
    expect(Object.keys(await again.all())).toHaveLength(20);
    expect((await again.get("agent:a:7"))?.claudeSessionId).toBe("id-7");
    await again.delete("agent:a:7");
    expect(await map.get("agent:a:7")).toBeUndefined();
    await writeFile(path, JSON.stringify({ sessions: [] }));
    await expect(map.get("x")).resolves.toBeUndefined();
    await writeFile(path, JSON.stringify({ sessions: "no" }));
    await expect(map.get("x")).rejects.toThrow(/sessions\.json: field sessions must be an object/);
  });

  it("keeps an ended session findable, with when and why it ended, and changes only the entry it names", async () => {
    const path = join(folder, "sessions.json");
    const map = new SessionMap(path);
    const entry = { claudeSessionId: "old", cwd: "/p", createdAt: "t0", updatedAt: "t1", turns: 3 };
    await map.set("agent:a:chat", entry);
    await map.patch("agent:a:chat", "other", (current) => ({ ...current, turns: 99 }));
    expect((await map.get("agent:a:chat"))?.turns).toBe(3);
    await map.patch("agent:a:chat", "old", (current) => ({ ...current, lastSent: ["f1"] }));
    await map.retire("agent:a:chat", "the session was reset in OpenClaw", new Date("2026-11-27T10:00:00Z"));
    expect(await map.get("agent:a:chat")).toBeUndefined();
    await map.retire("agent:a:nothing", "no entry: nothing happens");
    const again = new SessionMap(path);
    expect(await again.ended()).toEqual([
      {
        ...entry,
        lastSent: ["f1"],
        sessionKey: "agent:a:chat",
        endedAt: "2026-11-27T10:00:00.000Z",
        reason: "the session was reset in OpenClaw",
      },
    ]);
    expect(((await stat(path)).mode & 0o777).toString(8)).toBe("600");
    for (let index = 0; index < MAX_ENDED + 5; index++) {
      await map.set("agent:a:chat", { ...entry, claudeSessionId: `id-${index}` });
      await map.retire("agent:a:chat", "again");
    }
    const ended = await map.ended();
    expect(ended).toHaveLength(MAX_ENDED);
    expect(ended.at(-1)?.claudeSessionId).toBe(`id-${MAX_ENDED + 4}`);
  });

  it("knows whether Claude Code still has a session's transcript", async () => {
    const env = { HOME: folder };
    const entry = { claudeSessionId: "abc", cwd: "/work/my project" };
    expect(await claudeSessionExists(entry, env)).toBe(false);
    await mkdir(join(folder, ".claude", "projects", "-work-my-project"), { recursive: true });
    await writeFile(join(folder, ".claude", "projects", "-work-my-project", "abc.jsonl"), "{}\n");
    expect(await claudeSessionExists(entry, env)).toBe(true);
  });
});

describe("the turn locks", () => {
  it("let one turn per session hold its lock, in 0600 files, and free it again", async () => {
    const locks = new TurnLocks(join(folder, "turns"));
    expect(await locks.take("agent:a:one")).toEqual({ taken: true });
    const second = await locks.take("agent:a:one");
    expect(second.taken).toBe(false);
    expect(second.taken === false && second.holder.holder.pid).toBe(process.pid);
    // Another instance (a sidecar replaced by a reload) in the same live process is refused too.
    expect((await new TurnLocks(join(folder, "turns")).take("agent:a:one")).taken).toBe(false);
    expect(await locks.take("agent:a:two")).toEqual({ taken: true });
    expect(((await stat(locks.fileOf("agent:a:one"))).mode & 0o777).toString(8)).toBe("600");
    await locks.release("agent:a:one");
    expect(await locks.take("agent:a:one")).toEqual({ taken: true });
    expect(await locks.sweep()).toEqual([]);
  });

  it("stop the process group a dead gateway's turn left running, and take no pid reused by another process for it", async () => {
    const folderOfLocks = join(folder, "turns");
    const locks = new TurnLocks(folderOfLocks);
    // The gateway that held the lock: a process that has ended.
    const gateway = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { stdio: "ignore" });
    await once(gateway, "spawn");
    const holder = processIdentity(gateway.pid)!;
    gateway.kill("SIGKILL");
    await once(gateway, "exit");
    expect(identityAlive(holder)).toBe(false);
    // Its Claude Code turn, still running in a process group of its own, with a child.
    const claude = spawn("sh", ["-c", "sleep 300 & wait"], { detached: true, stdio: "ignore" });
    await once(claude, "spawn");
    const claudeIdentity = processIdentity(claude.pid)!;
    await mkdir(folderOfLocks, { recursive: true });
    await writeFile(
      locks.fileOf("agent:a:crashed"),
      JSON.stringify({ sessionKey: "agent:a:crashed", holder, claude: claudeIdentity, takenAt: "t" }),
      { mode: 0o600 },
    );
    // A lock naming a live pid with another start time: that pid now belongs to someone else.
    await writeFile(
      locks.fileOf("agent:a:reused"),
      JSON.stringify({
        sessionKey: "agent:a:reused",
        holder: { pid: process.pid, startTime: "not-this-process" },
        claude: { pid: process.pid, startTime: "not-this-process" },
        takenAt: "t",
      }),
      { mode: 0o600 },
    );
    expect(await locks.take("agent:a:alive")).toEqual({ taken: true });
    const cleared = await locks.sweep();
    expect(cleared.map((record) => record.sessionKey).sort()).toEqual(["agent:a:crashed", "agent:a:reused"]);
    expect(processGroupAlive(claude.pid!)).toBe(false);
    // This process was not signalled for the reused pid, and the live lock stays.
    expect((await locks.take("agent:a:alive")).taken).toBe(false);
    expect(await locks.take("agent:a:crashed")).toEqual({ taken: true });
  });
});

describe("the install step", () => {
  it("adds the provider, the agent and the settings, and uninstall takes exactly those out", async () => {
    const configPath = join(folder, "openclaw.json");
    const original = {
      gateway: { port: 18789 },
      models: { providers: { other: { baseUrl: "http://x", api: "anthropic-messages" } } },
      agents: { defaults: { model: { primary: "other/m" } }, entries: { main: { name: "Main" } } },
      plugins: { entries: { gstack: { enabled: true, config: { gstackHome: "/g" } } } },
    };
    await writeFile(configPath, JSON.stringify(original, null, 2));
    const pluginStateDir = join(folder, "gstack");
    const settings = await installContractor({
      configPath,
      pluginStateDir,
      projectDir: "/work/widget",
      port: 18999,
    });
    const config = JSON.parse(await readFile(configPath, "utf8"));
    expect(config.gateway).toEqual(original.gateway);
    expect(config.models.providers.other).toEqual(original.models.providers.other);
    expect(config.models.providers["gstack-claude"]).toMatchObject({
      baseUrl: "http://127.0.0.1:18999/v1",
      api: "openai-completions",
      apiKey: { source: "file", provider: "gstack-contractor", id: "value" },
    });
    expect(config.secrets).toEqual({
      providers: {
        "gstack-contractor": { source: "file", path: settings.keyFile, mode: "singleValue" },
      },
    });
    const key = await readSidecarKey(settings.keyFile);
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(await readFile(configPath, "utf8")).not.toContain(key);
    expect(config.agents.entries["claude-code"].model.primary).toBe("gstack-claude/claude-code");
    // The agent that answered before stays the default, in its own workspace.
    expect(config.agents.entries.main).toEqual({ name: "Main", workspace: join(folder, "workspace") });
    expect(config.agents.ownership).toBe("explicit");
    expect(config.agents.defaults.systemAgent).toEqual({ agentId: "main" });
    expect(config.plugins.entries.gstack.config.contractor).toMatchObject({
      enabled: true,
      projectDir: "/work/widget",
    });
    const doctor = await checkContractor({ configPath, pluginStateDir });
    expect(doctor.find((line) => line.line.startsWith("key "))).toEqual({
      ok: true,
      line: `key ${settings.keyFile} (0600) is the provider's apiKey through the SecretRef secrets.providers.gstack-contractor`,
    });
    expect(doctor.find((line) => line.line.startsWith("project folder"))?.ok).toBe(false);

    expect(await uninstallContractor({ configPath, pluginStateDir })).toEqual([
      "models.providers.gstack-claude",
      "agents.entries.claude-code",
      "agents.ownership",
      "agents.defaults.systemAgent",
      "secrets.providers.gstack-contractor",
      "plugins.entries.gstack.config.contractor",
    ]);
    expect(JSON.parse(await readFile(configPath, "utf8"))).toEqual(original);
  });

  it("makes the implicit main agent explicit when no agent was configured, and takes it back out", async () => {
    const configPath = join(folder, "openclaw.json");
    const original = { plugins: { entries: { gstack: { enabled: true } } } };
    await writeFile(configPath, JSON.stringify(original));
    const pluginStateDir = join(folder, "gstack");
    await installContractor({ configPath, pluginStateDir, projectDir: "/p" });
    await installContractor({ configPath, pluginStateDir, projectDir: "/p" });
    const config = JSON.parse(await readFile(configPath, "utf8"));
    expect(Object.keys(config.agents.entries)).toEqual(["main", "claude-code"]);
    expect(config.agents.entries.main).toEqual({ workspace: join(folder, "workspace") });
    expect(config.agents.defaults.systemAgent).toEqual({ agentId: "main" });
    await uninstallContractor({ configPath, pluginStateDir });
    expect(JSON.parse(await readFile(configPath, "utf8"))).toEqual(original);
  });

  it("replaces an older install's plain-text key with the SecretRef, and doctor flags the plain key with its fix", async () => {
    const configPath = join(folder, "openclaw.json");
    const pluginStateDir = join(folder, "gstack");
    const original = {
      secrets: { providers: { vault: { source: "env" } } },
      plugins: { entries: { gstack: { enabled: true } } },
    };
    await writeFile(configPath, JSON.stringify(original));
    const settings = await installContractor({ configPath, pluginStateDir, projectDir: folder });
    const key = (await readSidecarKey(settings.keyFile)) as string;
    // What an older install wrote: the key itself, and no secret provider.
    const older = JSON.parse(await readFile(configPath, "utf8"));
    older.models.providers["gstack-claude"].apiKey = key;
    delete older.secrets.providers["gstack-contractor"];
    await writeFile(configPath, JSON.stringify(older, null, 2));
    // The fourth line, after enabled, provider and agent.
    const keyLine = async () => (await checkContractor({ configPath, pluginStateDir }))[3];
    expect(await keyLine()).toEqual({
      ok: false,
      line: `models.providers.gstack-claude.apiKey holds the key in plain text (agent-readable, kept in backups): run the install step again (openclaw gstack-contractor install --project <folder>) to replace it with a SecretRef to ${settings.keyFile}`,
    });

    await installContractor({ configPath, pluginStateDir, projectDir: folder });
    const text = await readFile(configPath, "utf8");
    expect(text).not.toContain(key);
    const migrated = JSON.parse(text);
    expect(migrated.models.providers["gstack-claude"].apiKey).toEqual({
      source: "file",
      provider: "gstack-contractor",
      id: "value",
    });
    expect(migrated.secrets.providers).toEqual({
      vault: { source: "env" },
      "gstack-contractor": { source: "file", path: settings.keyFile, mode: "singleValue" },
    });
    expect((await keyLine())?.ok).toBe(true);
    // The key file is the same one: the running sidecar's key did not change.
    expect(await readSidecarKey(settings.keyFile)).toBe(key);

    await uninstallContractor({ configPath, pluginStateDir });
    expect(JSON.parse(await readFile(configPath, "utf8"))).toEqual(original);
  });

  it("doctor refuses a SecretRef that does not lead to the key file, and a key file OpenClaw would not read", async () => {
    const configPath = join(folder, "openclaw.json");
    const pluginStateDir = join(folder, "gstack");
    const settings = await installContractor({ configPath, pluginStateDir, projectDir: folder });
    const keyLine = async () => (await checkContractor({ configPath, pluginStateDir }))[3];
    type Config = { secrets?: { providers: Record<string, { path: string }> } };
    const edit = async (change: (config: Config) => void) => {
      const config = JSON.parse(await readFile(configPath, "utf8"));
      change(config);
      await writeFile(configPath, JSON.stringify(config));
    };
    await edit((config) => {
      (config.secrets as NonNullable<Config["secrets"]>).providers["gstack-contractor"]!.path = join(
        folder,
        "elsewhere.key",
      );
    });
    expect((await keyLine())?.line).toBe(
      `secrets.providers.gstack-contractor reads ${join(folder, "elsewhere.key")}, not the key file ${settings.keyFile}: run the install step again (openclaw gstack-contractor install --project <folder>)`,
    );
    await installContractor({ configPath, pluginStateDir, projectDir: folder });
    await edit((config) => {
      delete config.secrets;
    });
    expect((await keyLine())?.line).toMatch(
      /^secrets\.providers\.gstack-contractor \(named by models\.providers\.gstack-claude\.apiKey\) is missing or not a file provider: run the install step again/,
    );
    await installContractor({ configPath, pluginStateDir, projectDir: folder });
    expect((await keyLine())?.ok).toBe(true);

    // A second hard link: OpenClaw's file provider refuses it, so doctor and install do too.
    await link(settings.keyFile, join(folder, "copy.key"));
    expect(await keyFileProblem(settings.keyFile)).toMatch(/has 2 hard links/);
    expect(await keyLine()).toMatchObject({ ok: false, line: expect.stringMatching(/has 2 hard links/) });
    await expect(installContractor({ configPath, pluginStateDir, projectDir: folder })).rejects.toThrow(
      /has 2 hard links, which OpenClaw's file secret provider refuses/,
    );
    await unlink(join(folder, "copy.key"));
    expect(await keyFileProblem(settings.keyFile)).toBeUndefined();
    const target = join(folder, "real.key");
    await rename(settings.keyFile, target);
    await symlink(target, settings.keyFile);
    expect(await keyFileProblem(settings.keyFile)).toMatch(/is a symlink/);
  });

  it("refuses a config that is not plain JSON, naming the file, and leaves it alone", async () => {
    const configPath = join(folder, "openclaw.json");
    await writeFile(configPath, "{ // comment\n gateway: {},\n}");
    await expect(installContractor({ configPath, pluginStateDir: folder, projectDir: "/p" })).rejects.toThrow(
      /openclaw\.json is not plain JSON/,
    );
    expect(await readFile(configPath, "utf8")).toBe("{ // comment\n gateway: {},\n}");
  });
});

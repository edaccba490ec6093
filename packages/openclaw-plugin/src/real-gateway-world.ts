import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, type OpenClawGateway, type OpenClawHome } from "@gstack/openclaw-testbed";
import { type ScriptedModel, type ScriptedResponder, startScriptedModel } from "@gstack/scripted-model";
import { afterAll, beforeAll, beforeEach } from "vitest";
import { openclawAgentResponder } from "./openclaw-scripts";
import {
  closeGatewayConnections,
  failureReport,
  type GstackWorld,
  gatewaysOn,
  installPlugin,
  installRecordingChannel,
  installScriptedCalendar,
  makeGstackWorld,
  makeOpenClawHome,
  packPlugin,
  pluginPackageDir,
  scriptedOpenClawConfig,
  startOpenClawGateway,
} from "./openclaw-world";

/** What a test file's real-gateway world is made of, beyond what every one has. */
export interface RealGatewayOptions {
  /** Prefix of the world's scratch folder in the system's temporary folder. */
  name: string;
  /** How the OpenClaw agent's scripted model answers (default: openclawAgentResponder). */
  respond?: ScriptedResponder;
  /**
   * The gstack plugin's config in the home (default: `{ gstackHome: world.root }`); it is told the
   * port the gateway will listen on, chosen before the home is written (the review page's
   * `publicBaseUrl` names it, say).
   */
  pluginConfig?: (world: GstackWorld, gateway: { port: number }) => Record<string, unknown>;
  /** Set-up of the gstack root before anything reads it (a callback secret, say). */
  prepareWorld?: (world: GstackWorld) => Promise<void>;
  /** Set-up of the home before the plugin is installed (another plugin, say). */
  prepareHome?: (home: OpenClawHome, scratch: string) => Promise<void>;
  /** What a failed test prints (default: failureReport of the gateway and the world; false: nothing). */
  onFailure?: false | ((world: RealGateway) => Promise<string>);
}

/**
 * One real OpenClaw gateway with this plugin installed as a user installs it (the packed
 * tarball, `openclaw plugins install`, `enable`), the OpenClaw agent's scripted model, and a
 * gstack root with a trusted repository. `gateway` is the newest gateway started on `home`: a
 * test that restarts it sees the new one here, and `close` stops every one still running.
 */
export interface RealGateway {
  scratch: string;
  world: GstackWorld;
  model: ScriptedModel;
  home: OpenClawHome;
  readonly gateway: OpenClawGateway;
  close(): Promise<void>;
}

/** Builds a {@link RealGateway}; whatever was made before a failure is removed again. */
export async function startRealGateway(options: RealGatewayOptions): Promise<RealGateway> {
  await stat(join(pluginPackageDir, "dist", "index.js")).catch(() => {
    throw new Error("build @gstack/openclaw-plugin before its end-to-end tests (pnpm run build)");
  });
  const cleanup: (() => Promise<unknown>)[] = [];
  const close = async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  };
  // Last of all, once the gateways are stopped: any connection to one still kept (see gatewayConnection).
  cleanup.push(() => closeGatewayConnections());
  try {
    const scratch = await mkdtemp(join(tmpdir(), `gstack-${options.name}-`));
    cleanup.push(() => rm(scratch, { recursive: true, force: true }));
    const tarball = await packPlugin(join(scratch, "pack"));
    const world = await makeGstackWorld();
    cleanup.push(() => world.remove());
    await options.prepareWorld?.(world);
    const model = await startScriptedModel({ respond: options.respond ?? openclawAgentResponder });
    cleanup.push(() => model.close());
    const port = await freePort();
    const pluginConfig = options.pluginConfig?.(world, { port }) ?? { gstackHome: world.root };
    const home = await makeOpenClawHome(scriptedOpenClawConfig(model, pluginConfig));
    cleanup.push(() => home.remove());
    cleanup.push(async () => {
      for (const gateway of gatewaysOn(home.home)) if (gateway.running()) await gateway.stop();
    });
    await options.prepareHome?.(home, scratch);
    await installPlugin(home, tarball);
    await startOpenClawGateway({ home: home.home, port });
    return {
      scratch,
      world,
      model,
      home,
      get gateway() {
        const gateway = gatewaysOn(home.home).at(-1);
        if (!gateway) throw new Error(`no gateway was started on ${home.home}`);
        return gateway;
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * The test file's {@link RealGateway}: built before its first test, closed after its last, and
 * reported on when a test fails. Its fields are there from the first test on.
 */
export function useRealGateway(options: RealGatewayOptions): RealGateway {
  let started: RealGateway | undefined;
  const world = (): RealGateway => {
    if (!started) throw new Error(`the ${options.name} real-gateway world is not started (outside a test?)`);
    return started;
  };
  beforeAll(async () => {
    started = await startRealGateway(options);
  });
  afterAll(async () => {
    await started?.close();
    started = undefined;
  });
  const onFailure = options.onFailure;
  if (onFailure !== false) {
    beforeEach(({ onTestFailed }) => {
      onTestFailed(async () => {
        if (!started) return;
        console.error(
          onFailure ? await onFailure(started) : await failureReport(started.gateway, started.world),
        );
      });
    });
  }
  return {
    get scratch() {
      return world().scratch;
    },
    get world() {
      return world().world;
    },
    get model() {
      return world().model;
    },
    get home() {
      return world().home;
    },
    get gateway() {
      return world().gateway;
    },
    close: () => world().close(),
  };
}

/**
 * One {@link RealGateway} for several suites of one test file: suites whose world is the same
 * (the default one, or the person's with a chat channel) share its gateway, so each does not pay
 * for a gateway of its own. Each suite keeps to its own sessions, dispatch ids and people, and
 * says in its `beforeAll` how the OpenClaw agent answers.
 */
export interface SharedGateway {
  readonly real: RealGateway;
  /** How the OpenClaw agent's scripted model answers from now on (default: openclawAgentResponder). */
  respondWith(respond?: ScriptedResponder): void;
}

/** The test file's {@link SharedGateway}, built before its first suite and closed after its last. */
export function useSharedGateway(
  name: string,
  world: Omit<RealGatewayOptions, "name" | "respond"> = {},
): SharedGateway {
  let current: ScriptedResponder = openclawAgentResponder;
  const real = useRealGateway({ ...world, name, respond: (request, index) => current(request, index) });
  return {
    real,
    respondWith(respond = openclawAgentResponder) {
      current = respond;
    },
  };
}

/** Where the recording chat channel of a world's home writes what it sends people (JSON lines). */
export function recordedMessagesFile(scratch: string): string {
  return join(scratch, "sent.jsonl");
}

/** What the recording chat channel has sent people so far, oldest first (none before the first). */
export async function recordedMessages(file: string): Promise<{ to: string; text: string }[]> {
  const text = await readFile(file, "utf8").catch(() => "");
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { to: string; text: string });
}

/**
 * The person's world: the recording chat channel installed (people are bound to sessions on it),
 * a scripted calendar (the morning brief reads today's events), and the review page's links on
 * the gateway's own address, where the person reaches it.
 */
export const personWorld: Omit<RealGatewayOptions, "name" | "respond"> = {
  pluginConfig: (world, { port }) => ({
    gstackHome: world.root,
    review: { publicBaseUrl: `http://127.0.0.1:${port}` },
  }),
  prepareHome: async (home, scratch) => {
    await installRecordingChannel(home, join(scratch, "recording-chat"), recordedMessagesFile(scratch));
    await installScriptedCalendar(home, join(scratch, "scripted-calendar"));
  },
  onFailure: async ({ gateway, world, scratch }) =>
    `${await failureReport(gateway, world)}\nsent to people: ${JSON.stringify(await recordedMessages(recordedMessagesFile(scratch)))}`,
};

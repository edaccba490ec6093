import { startCommand } from "@gstack/contracts/node-support";

// Much of a cold run is compiling the generator's modules; Node's on-disk cache keeps that
// for the next run (NODE_DISABLE_COMPILE_CACHE=1 turns it off). Everything loads after this.
startCommand("gstack-openclaw-gen");
await import("./cli-main");

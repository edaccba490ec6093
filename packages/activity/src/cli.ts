#!/usr/bin/env node
import { startCommand } from "@gstack/contracts/node-support";

// Start-up is mostly compiling dependencies; Node's on-disk cache makes later runs quicker
// (NODE_DISABLE_COMPILE_CACHE=1 turns it off). Everything else loads after this line.
startCommand("gstack-activity");
await import("./cli/cli-main");

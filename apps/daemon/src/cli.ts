#!/usr/bin/env node
import { startCommand } from "@gstack/contracts/node-support";
import { quickStatusArgs } from "./commands/status-quick";

// Start-up is mostly compiling dependencies; Node's on-disk cache makes later runs quicker
// (NODE_DISABLE_COMPILE_CACHE=1 turns it off). Everything else, but the reading of a plain
// status's arguments (node:util only), loads after this line.
startCommand("gstack-dispatch");
// A plain status loads only what it runs; every other command line goes through the full CLI.
const status = process.argv[2] === "status" ? quickStatusArgs(process.argv.slice(3)) : undefined;
if (status) await (await import("./commands/status-run")).runStatus(status);
else await import("./cli-main");

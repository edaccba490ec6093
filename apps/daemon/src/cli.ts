#!/usr/bin/env node
import { defineCommand, runMain } from "citty";
import { DAEMON_VERSION } from "./version";

// Each command is loaded only when it runs, so `--help` and the short commands start fast.
const main = defineCommand({
  meta: { name: "gstack-dispatch", version: DAEMON_VERSION, description: "The gstack dispatch daemon" },
  subCommands: {
    run: () => import("./commands/run").then((module) => module.run),
    status: () => import("./commands/status").then((module) => module.status),
    submit: () => import("./commands/submit").then((module) => module.submit),
    cancel: () => import("./commands/cancel").then((module) => module.cancel),
    install: () => import("./commands/install").then((module) => module.install),
    "clawvisor-serve": () => import("./commands/clawvisor-serve").then((module) => module.clawvisorServe),
    demo: () => import("./commands/demo").then((module) => module.demo),
  },
});

void runMain(main);

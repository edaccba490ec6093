#!/usr/bin/env node
// The gstack-handoff command, bundled so this one package installs it without the registry. The
// Node check comes first and the rest loads after it, so a too-old Node gets one line.
import { startCommand } from "@gstack/contracts/node-support";

startCommand("gstack-handoff");
await import("../bundle-dependencies");
await import("../../../handoff/src/cli");

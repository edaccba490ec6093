import { startCommand } from "@gstack/contracts/node-support";

// The Node check and the help's colour setting come first: citty reads NO_COLOR once when it
// loads, so the commands (and citty with them) load only after this line.
startCommand("gstack-learnings");
await import("./cli-main");

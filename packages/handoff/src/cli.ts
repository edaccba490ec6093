import { startCommand } from "@gstack/contracts/node-support";

// Start-up is what a caller waits for on every call. The top-level help and version render
// from names and descriptions alone; anything else loads the commands, with Node's on-disk
// compile cache (NODE_DISABLE_COMPILE_CACHE=1 turns it off) making later runs quicker.
startCommand("gstack-handoff");
// citty reads NO_COLOR once when it loads, so it loads only after the check above sets it.
const { runMain } = await import("citty");

const args = process.argv.slice(2);
const topLevelOnly =
  args.length === 0 || (args.length === 1 && ["--help", "-h", "--version", "-v"].includes(args[0]!));
if (topLevelOnly) {
  const { commandOutline } = await import("./command-outline");
  await runMain(commandOutline);
} else {
  const { main } = await import("./cli-main");
  await runMain(main);
}

import { defineCommand } from "citty";
import { Daemon } from "../daemon";
import { commandMeta } from "./command-meta";
import { fail, layoutOf, rootArg, timestamped } from "./common";

export const run = defineCommand({
  meta: commandMeta.run,
  args: { ...rootArg },
  async run({ args }) {
    const daemon = new Daemon({ root: layoutOf(args).root, log: timestamped });
    try {
      await daemon.start();
    } catch (error) {
      fail(error);
    }
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      signals += 1;
      if (signals > 1) {
        timestamped(`${signal} again: cancelling running sessions now`);
        void daemon.stop(0);
        return;
      }
      timestamped(
        `${signal}: finishing running sessions (up to ${daemon.settings.shutdown_grace_seconds} s)`,
      );
      void daemon.stop();
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
    await daemon.stopped;
    process.exit(0);
  },
});

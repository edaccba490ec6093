import { DaemonError } from "@gstack/daemon-client";
import { defineCommand } from "citty";
import { startClawvisorFront } from "../service-api/clawvisor-front";
import { commandMeta } from "./command-meta";
import { fail, layoutOf, rootArg, timestamped } from "./common";

export const clawvisorServe = defineCommand({
  meta: commandMeta["clawvisor-serve"],
  args: {
    ...rootArg,
    socket: { type: "string", description: "the socket to serve on (default: CLAWVISOR_SOCKET)" },
  },
  async run({ args }) {
    try {
      const socketPath = args.socket ?? process.env.CLAWVISOR_SOCKET;
      if (!socketPath)
        throw new DaemonError("CLAWVISOR_SOCKET is not set; clawvisor-local sets it, or pass --socket");
      const server = await startClawvisorFront({ layout: layoutOf(args), socketPath, log: timestamped });
      timestamped(`gstack-coding service on ${socketPath}`);
      const stop = () => server.close(() => process.exit(0));
      process.on("SIGTERM", stop);
      process.on("SIGINT", stop);
    } catch (error) {
      fail(error);
    }
  },
});

// Writes about argv[3] bytes of stream-json to stdout by repeating the lines in file argv[2],
// framed by an init and a result event, the way a long Claude Code session would.
import { readFileSync } from "node:fs";

const block = readFileSync(process.argv[2]);
const target = Number(process.argv[3] ?? 1024 ** 3);
let written = 0;
process.stdout.write(
  `${JSON.stringify({ type: "system", subtype: "init", session_id: "bench", model: "bench" })}\n`,
);
function pump() {
  while (written < target) {
    written += block.length;
    if (!process.stdout.write(block)) {
      process.stdout.once("drain", pump);
      return;
    }
  }
  process.stdout.write(
    `${JSON.stringify({ type: "result", subtype: "success", is_error: false, num_turns: 1, result: "done" })}\n`,
  );
}
pump();

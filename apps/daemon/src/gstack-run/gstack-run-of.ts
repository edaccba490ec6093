import { type GstackRunSummary, parseGstackResultLine } from "@gstack/contracts";
import { readGstackRun } from "./read-gstack-run";

/**
 * What the completion says of gstack: undefined when the agent said no `GSTACK_RESULT:` line
 * (it ran no unattended gstack skill) or the last one does not parse (then there is no run to
 * name; the report says so from the line itself), else the run read and checked.
 */
export async function gstackRunOf(
  line: string | undefined,
  options: { cwd: string; consumer: string; now: Date },
): Promise<GstackRunSummary | undefined> {
  if (line === undefined) return undefined;
  const parsed = parseGstackResultLine(line);
  if (!parsed) return undefined;
  try {
    return await readGstackRun({ line: parsed, ...options });
  } catch (error) {
    return {
      skill: parsed.skill,
      status: parsed.status,
      run_dir: parsed.run,
      check: "invalid",
      problems: [`the run directory could not be read: ${(error as Error).message}`],
    };
  }
}

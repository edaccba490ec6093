import { MoveRefused } from "./checkout-move";

/** Why landing or discarding was refused; nothing was changed. `files` names what is in the way. */
export class LandRefusal extends Error {
  constructor(
    readonly rule:
      | "unknown"
      | "not-finished"
      | "in-place"
      | "discarded"
      | "landed"
      | "no-branch"
      | "nothing"
      | "base-not-branch"
      | "dirty-checkout"
      | "locked"
      | "unfinished"
      | "conflict"
      | "in-the-way"
      | "unlanded"
      | "no-remote"
      | "no-gh"
      | "untrusted"
      | "git",
    message: string,
    readonly files: string[] = [],
  ) {
    super(message);
    this.name = "LandRefusal";
  }
}

/** A checkout-moving step's refusal, as the landing's. */
export async function refusedAs<T>(step: Promise<T>): Promise<T> {
  try {
    return await step;
  } catch (error) {
    if (error instanceof MoveRefused) {
      const rule = error.rule === "locked" || error.rule === "unfinished" ? error.rule : "git";
      throw new LandRefusal(rule, error.message, error.files);
    }
    throw error;
  }
}

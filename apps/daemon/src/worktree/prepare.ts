import type { Dispatch } from "@gstack/contracts";
import { type SessionState, submodulesNote, writeState } from "@gstack/daemon-client";
import type { DaemonContext } from "../daemon-context";
import { materializeWorktree } from "./materialize";
import { planWorktree } from "./plan";

/**
 * Gets a session's place to work ready before its agent starts: the project's own checkout
 * when it is listed in `in_place_projects`, else a worktree of its own. The worktree is planned
 * and written to the session's state before it is made, so a crash anywhere in between finds
 * the same folder, branch and base on the next start. Throws a WorktreeRefusal when the
 * project cannot have one.
 */
export function prepareWorkspace(
  context: DaemonContext,
  state: SessionState,
  dispatch: Dispatch,
): Promise<void> {
  // Dispatches are prepared side by side, into one repository too: a git that meets another's
  // half-written worktree record or held lock is run again (see materializeWorktree).
  return prepareNow(context, state, dispatch);
}

async function prepareNow(context: DaemonContext, state: SessionState, dispatch: Dispatch): Promise<void> {
  if (state.in_place) return;
  if (!state.worktree && context.settings.in_place_projects?.includes(state.project)) {
    state.in_place = true;
    return;
  }
  if (!state.worktree) {
    state.worktree = await planWorktree({
      stateRoot: context.layout.root,
      project: state.project,
      dispatchId: state.id,
      projectDir: state.project_dir,
      ...(dispatch.branch !== undefined ? { branch: dispatch.branch } : {}),
      ...(dispatch.base !== undefined ? { base: dispatch.base } : {}),
      now: context.now(),
    });
    state.base_sha = state.worktree.base_sha;
    state.branch = state.worktree.branch;
    await writeState(context.layout, state);
  }
  const made = await materializeWorktree(state.worktree);
  if (made) {
    const { path, branch, base, base_sha } = state.worktree;
    await context.audit("worktree_created", {
      dispatch_id: state.id,
      detail: { path, branch, base, base_sha },
    });
    context.log(`made worktree ${path} on ${branch} from ${base}`);
    const note = submodulesNote(state.worktree);
    if (note) context.log(`${state.id}: ${note}`);
  }
}

import type { BriefOptions, OpenWork } from "@gstack/brief";
import type { GstackLayout } from "@gstack/contracts";
import { folderOrRepositoryListed, readStatus } from "@gstack/daemon-client";
import { readDispatchSettings } from "./gstack-settings";
import type { PluginSettings } from "./plugin-settings";
import { readSessionState } from "./review/dispatch-view";
import { sentDispatches } from "./sent-dispatches";

/**
 * A project's open work as the daemon's state holds it (the same reading as `gstack-dispatch
 * status`): running and queued dispatches, those waiting for the person's answer, and finished
 * ones whose branches wait to be landed, each with its folder and task when the records say.
 */
export async function readOpenWork(
  layout: GstackLayout,
  stateDir: string,
  project: string,
): Promise<OpenWork[]> {
  const status = await readStatus(layout);
  const { sessions } = status;
  const found: OpenWork[] = [];
  for (const session of sessions.sessions) {
    if (session.project !== project) continue;
    found.push({ id: session.id, project, state: "running", ageSeconds: session.elapsed });
  }
  for (const queued of sessions.queue ?? []) {
    if (queued.project !== project) continue;
    found.push({ id: queued.id, project, state: "queued", ageSeconds: queued.waiting });
  }
  for (const waiting of sessions.awaiting ?? []) {
    if (waiting.project !== project) continue;
    found.push({
      id: waiting.id,
      project,
      state: "awaiting-answer",
      kind: waiting.kind,
      ageSeconds: waiting.waiting,
    });
  }
  for (const finished of status.awaiting ?? []) {
    if (finished.project !== project) continue;
    found.push({
      id: finished.id,
      project,
      state: finished.nothing ? "nothing-to-land" : "awaiting-landing",
      branch: finished.branch,
      base: finished.base,
      ageSeconds: finished.age_seconds,
    });
  }
  const sent = sentDispatches(stateDir);
  return Promise.all(
    found.map(async (work) => {
      const [state, record] = await Promise.all([
        readSessionState(layout, work.id).catch(() => undefined),
        sent.recall(work.id).catch(() => undefined),
      ]);
      return {
        ...work,
        ...(state?.project_dir ? { projectDir: state.project_dir } : {}),
        ...(record?.task ? { task: record.task } : {}),
      };
    }),
  );
}

/** Where a brief on this host reads from: the gstack root, the daemon's state and its settings. */
export async function briefOptions(settings: PluginSettings, now = new Date()): Promise<BriefOptions> {
  const dispatch = await readDispatchSettings(settings.layout);
  return {
    root: settings.gstackHome,
    now,
    openWork: (project) => readOpenWork(settings.layout, settings.stateDir, project),
    settings: {
      ...(dispatch.default_budget_usd !== undefined ? { defaultBudgetUsd: dispatch.default_budget_usd } : {}),
      trustedRepos: dispatch.trusted_repos,
      planFirst: (folder) => folderOrRepositoryListed(folder, dispatch.plan_first_repos ?? []),
    },
  };
}

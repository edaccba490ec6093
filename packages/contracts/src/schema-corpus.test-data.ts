import type { DocumentKind } from "./documents";

/** Documents every validator must accept (`valid`) or refuse (`invalid`), by kind and name. */
export interface KindCorpus {
  valid: Record<string, unknown>;
  invalid: Record<string, unknown>;
}

const ts = "2026-04-03T14:30:00Z";
const sha = "a".repeat(64);

const dispatch = {
  id: "dispatch-2026-04-03-auth-flow",
  dispatched_by: "wintermute",
  task: "Build JWT auth flow with refresh token rotation",
  project: "baku",
  project_dir: "~/git/baku",
};

const gstackRun = {
  schema_version: 1,
  run: "r1",
  status: "complete",
  required_phases: [],
  phases: {},
  artifacts: { "decisions.jsonl": { path: "decisions.jsonl", sha256: sha } },
};

const gstackDecision = {
  schema_version: 1,
  run: "r1",
  id: "r1-d1",
  title: "Keep the cache",
  options: ["a", "b"],
  recommended: "a",
  kind: "approval",
  status: "pending",
  gate_rev: 1,
};

const gstackFinding = {
  schema_version: 1,
  run: "r1",
  id: "r1-eng-native-1",
  phase: "eng",
  voice: "native",
  severity: "Critical",
  title: "SQL injection in search",
};

const gstackTask = {
  schema_version: 2,
  run: "r1",
  id: "r1-t1",
  title: "Escape the query",
  status: "ready",
  depends_on: [],
  findings: ["r1-eng-native-1"],
  blocked_by: [],
  acceptance: "pnpm test search",
};

function without<T extends Record<string, unknown>>(value: T, key: keyof T): Record<string, unknown> {
  const { [key]: _removed, ...rest } = value;
  return rest;
}

const urlCases = {
  valid: {
    "https with path and query":
      "https://your-clawvisor.ngrok.app/api/tasks/task_abc123/complete?x=1&y=2#top",
    "loopback ip and port": "http://127.0.0.1:18789/hooks/agent",
    localhost: "http://localhost/",
    "ipv6 loopback": "http://[::1]:8080/callback",
    "full ipv6": "https://[2001:db8:85a3:0:0:8a2e:370:7334]/x",
    "ipv6 with embedded ipv4": "http://[::ffff:192.168.1.1]/",
    "upper-case scheme": "HTTPS://EXAMPLE.COM/Hook",
    "percent-encoded path": "https://host.example/a%20b/%C3%A9",
    "highest port": "http://host.example:65535",
    "punycode host": "https://xn--r8jz45g.jp/",
  },
  invalid: {
    "ftp scheme": "ftp://files.example/upload",
    "file scheme": "file:///etc/passwd",
    "javascript scheme": "javascript:alert(1)",
    "mailto scheme": "mailto:ops@example.com",
    "ws scheme": "ws://host.example/socket",
    "no scheme": "host.example/path",
    "scheme without slashes": "http:host.example",
    "unicode host": "https://例え.jp/",
    "port above 65535": "http://host.example:65536/",
    "octet above 255": "http://1.2.3.999/",
    "numeric last label": "http://host.123/",
    "user info": "https://user:secret@host.example/",
    "space in path": "https://host.example/a b",
    "brace in path": "https://host.example/{id}",
    backslash: "https://host.example\\evil",
    "bad percent escape": "https://host.example/%zz",
    "bad ipv6": "http://[1:::2]/",
    "empty host": "http:///path",
    "trailing dot host": "http://host.example./",
    "empty string": "",
  },
};

function urlDocuments(base: Record<string, unknown>, field: string, verdict: "valid" | "invalid") {
  return Object.fromEntries(
    Object.entries(urlCases[verdict]).map(([name, url]) => [`${field}: ${name}`, { ...base, [field]: url }]),
  );
}

const dateTimes = {
  valid: {
    "Z zone": "2026-04-03T14:30:00Z",
    "offset zone": "2026-04-03T14:30:00+02:00",
    "negative offset": "2026-04-03T14:30:00-11:30",
    "fractional seconds": "2026-04-03T14:30:00.123456Z",
    "leap day": "2024-02-29T00:00:00Z",
    "year 2000 leap day": "2000-02-29T23:59:59Z",
    "leap second": "2016-12-31T23:59:60Z",
    "leap second with an offset": "2017-01-01T00:59:60+01:00",
    "leap second with a fraction": "2016-12-31T18:59:60.5-05:00",
  },
  invalid: {
    "no zone": "2026-04-03T14:30:00",
    "date only": "2026-04-03",
    "space separator": "2026-04-03 14:30:00Z",
    "lower-case t": "2026-04-03t14:30:00Z",
    "lower-case z": "2026-04-03T14:30:00z",
    "no seconds": "2026-04-03T14:30Z",
    "offset without colon": "2026-04-03T14:30:00+0200",
    "hour 24": "2026-04-03T24:00:00Z",
    "second 60 before 23:59 UTC": "2016-12-31T12:00:60Z",
    "second 60 at 23:59 local time with an offset": "2016-12-31T23:59:60+01:00",
    "second 61": "2016-12-31T23:59:61Z",
    "february 30": "2026-02-30T00:00:00Z",
    "1900 leap day": "1900-02-29T00:00:00Z",
    "month 13": "2026-13-01T00:00:00Z",
    "epoch number": 1775226600,
  },
};

function dateTimeDocuments(base: Record<string, unknown>, field: string, verdict: "valid" | "invalid") {
  return Object.fromEntries(
    Object.entries(dateTimes[verdict]).map(([name, value]) => [
      `${field}: ${name}`,
      { ...base, [field]: value },
    ]),
  );
}

const learning = {
  skill: "investigate",
  type: "pitfall",
  key: "drizzle-not-prisma",
  insight: "Baku uses Drizzle ORM, not Prisma",
  confidence: 7,
  source: "observed",
  files: ["src/db/schema.ts"],
  ts,
  trusted: false,
};

const completion = { dispatch_id: "dispatch-auth", status: "completed", duration: 847 };
const handoff = { from: "gstack", to: "wintermute", project: "baku", timestamp: ts };
const activity = { ts, project: "baku", skill: "ship", duration: 847 };
const heartbeat = { ts, active: 1, queued: 0, pid: 4242 };
const listSessions = {
  active: 2,
  max_concurrent: 2,
  queued: 1,
  sessions: [
    { id: "dispatch-auth-flow", project: "baku", elapsed: 423 },
    { id: "dispatch-fix-ci", project: "gstack", elapsed: 87 },
  ],
};

/** The corpus: hand-picked edge cases for every document kind. */
export const corpus: Record<DocumentKind, KindCorpus> = {
  dispatch: {
    valid: {
      "design example": {
        ...dispatch,
        learnings: ["...relevant memories from Wintermute..."],
        constraints: ["mobile client needs offline token refresh"],
        callback_url: "https://your-clawvisor.ngrok.app/api/tasks/task_abc123/complete",
        clawvisor_task_id: "task_abc123",
        ttl_seconds: 3600,
      },
      "required fields only": dispatch,
      "every optional field": {
        ...dispatch,
        learnings: ["Baku's tests run with pnpm test"],
        constraints: ["keep the public API"],
        callback_url: "https://clawvisor.example/api/tasks/task_abc123/complete",
        clawvisor_task_id: "task_abc123",
        target_agent: "codex",
        source_signature: sha,
        ttl_seconds: 3600,
        created_at: ts,
        branch: "garrytan/auth-flow",
        base: "main",
        task_type: "security",
        files: ["src/auth/*.ts"],
        handoff_id: "handoff-1",
        reply_to: {
          runtime: "openclaw",
          session_key: "agent:main:main",
          agent_id: "main",
          session_id: "5c1e0a2f",
        },
        budget_usd: 5,
        mode: "plan",
      },
      "mode execute": { ...dispatch, mode: "execute" },
      "an agent the config names": { ...dispatch, target_agent: "claude-acp" },
      "an agent name of 32 characters": { ...dispatch, target_agent: "a".repeat(32) },
      "task with tabs and line breaks": { ...dispatch, task: "Fix it:\n\t1. the test\r\n\t2. the docs" },
      "task in Hebrew with a direction mark": { ...dispatch, task: "תקן את הבדיקה (שלב 2)\u200f." },
      "base as a revision": { ...dispatch, base: "HEAD~2" },
      "base as a commit": { ...dispatch, base: "0123456789abcdef" },
      "dispatched by a name with an emoji sequence": { ...dispatch, dispatched_by: "👩‍💻 builder" },
      "files with an empty entry": { ...dispatch, files: [""] },
      "ttl at lower bound": { ...dispatch, ttl_seconds: 60 },
      "with a budget": { ...dispatch, budget_usd: 2.5 },
      "ttl at upper bound": { ...dispatch, ttl_seconds: 86_400 },
      "ttl written as 3600.0": { ...dispatch, ttl_seconds: 3600.0 },
      "unknown field kept": { ...dispatch, priority: "high", nested: { anything: [1, 2] } },
      "unicode task": { ...dispatch, task: "Réparer l'authentification 🔐 — 認証を直す" },
      "task of exactly 100000 emoji": { ...dispatch, task: "🔐".repeat(100_000) },
      "longest id": { ...dispatch, id: `dispatch-${"x".repeat(120)}` },
      "slug with dots": { ...dispatch, project: "acme.widget_v2-x" },
      "reply to an OpenClaw session": {
        ...dispatch,
        reply_to: { runtime: "openclaw", session_key: "agent:main:main", agent_id: "main" },
      },
      ...urlDocuments(dispatch, "callback_url", "valid"),
      ...dateTimeDocuments(dispatch, "created_at", "valid"),
    },
    invalid: {
      "missing id": without(dispatch, "id"),
      "missing task": without(dispatch, "task"),
      "missing project_dir": without(dispatch, "project_dir"),
      "empty task": { ...dispatch, task: "" },
      "task of 100001 emoji": { ...dispatch, task: "🔐".repeat(100_001) },
      "id without prefix": { ...dispatch, id: "auth-flow" },
      "id with slash": { ...dispatch, id: "dispatch-../../etc" },
      "id too long": { ...dispatch, id: `dispatch-${"x".repeat(121)}` },
      "project '..'": { ...dispatch, project: ".." },
      "project with slash": { ...dispatch, project: "acme/widget" },
      "project with unicode": { ...dispatch, project: "café" },
      "ttl below bound": { ...dispatch, ttl_seconds: 59 },
      "budget of nothing": { ...dispatch, budget_usd: 0 },
      "budget as text": { ...dispatch, budget_usd: "5" },
      "mode in another case": { ...dispatch, mode: "Plan" },
      "mode as a number": { ...dispatch, mode: 1 },
      "mode unknown": { ...dispatch, mode: "review" },
      "base starting with '-'": { ...dispatch, base: "-x" },
      "base as an option": { ...dispatch, base: "--output=/tmp/x" },
      "base empty": { ...dispatch, base: "" },
      "base with a line break": { ...dispatch, base: "main\nHEAD" },
      "branch starting with '-'": { ...dispatch, branch: "-b" },
      "branch with a right-to-left override": { ...dispatch, branch: "fix/\u202eexe.sh" },
      "task with an escape sequence": { ...dispatch, task: "Fix \u001b[2J\u001b[31mthis" },
      "task with a bell": { ...dispatch, task: "ring\u0007" },
      "task with a right-to-left override": { ...dispatch, task: "rm -rf \u202e/ fdsa" },
      "task with a direction isolate": { ...dispatch, task: "a\u2066b\u2069" },
      "task with a C1 control": { ...dispatch, task: "a\u009b31m" },
      "task with DEL": { ...dispatch, task: "a\u007f" },
      "learnings with an escape": { ...dispatch, learnings: ["ok", "\u001b]0;title\u0007"] },
      "constraints with a vertical tab": { ...dispatch, constraints: ["a\u000bb"] },
      "project_dir with NUL": { ...dispatch, project_dir: "/tmp/a\u0000b" },
      "files with NUL": { ...dispatch, files: ["src/a\u0000.ts"] },
      "dispatched_by a lone zero-width joiner": { ...dispatch, dispatched_by: "\u200d" },
      "dispatched_by only spaces": { ...dispatch, dispatched_by: "  " },
      "dispatched_by with a line break": { ...dispatch, dispatched_by: "w\n## Task" },
      "task_type with a direction mark": { ...dispatch, task_type: "security\u200f" },
      "clawvisor_task_id with a tab": { ...dispatch, clawvisor_task_id: "task\t1" },
      "handoff_id with a line break": { ...dispatch, handoff_id: "h\n1" },
      "ttl above bound": { ...dispatch, ttl_seconds: 86_401 },
      "ttl fractional": { ...dispatch, ttl_seconds: 60.5 },
      "ttl as string": { ...dispatch, ttl_seconds: "3600" },
      "agent name with capitals and a space": { ...dispatch, target_agent: "Copilot Agent" },
      "agent name of 33 characters": { ...dispatch, target_agent: "a".repeat(33) },
      "agent name starting with a dash": { ...dispatch, target_agent: "-agent" },
      "agent null": { ...dispatch, target_agent: null },
      "learnings not a list": { ...dispatch, learnings: "remember this" },
      "learnings with a number": { ...dispatch, learnings: ["a", 1] },
      "signature upper-case hex": { ...dispatch, source_signature: sha.toUpperCase() },
      "signature too short": { ...dispatch, source_signature: "abc" },
      "reply_to without a session key": { ...dispatch, reply_to: { runtime: "openclaw" } },
      "reply_to of another runtime": { ...dispatch, reply_to: { runtime: "slack", session_key: "x" } },
      "document is an array": [dispatch],
      "document is null": null,
      ...urlDocuments(dispatch, "callback_url", "invalid"),
      ...dateTimeDocuments(dispatch, "created_at", "invalid"),
    },
  },
  completion: {
    valid: {
      minimal: completion,
      "failed with kind": {
        ...completion,
        status: "failed",
        error: "rate limited",
        error_kind: "rate_limit",
      },
      everything: {
        ...completion,
        commits: 3,
        pr: "garrytan/baku#47",
        retries: 1,
        project: "baku",
        agent: "claude",
        session_id: "3f2a",
        started_at: ts,
        finished_at: "2026-04-03T14:44:07.5+00:00",
        branch: "garrytan/auth-flow",
        commit_shas: ["abc1234", "0123456789abcdef0123456789abcdef01234567"],
        artifacts: ["pr:47", "file:docs/auth.md"],
        turns: 40,
        cost_usd: 0,
      },
      "with a gstack run": {
        ...completion,
        gstack_run: {
          skill: "autoplan",
          status: "gate_pending",
          run_dir: ".gstack/runs/r1",
          check: "valid",
          run: "r1",
          decisions_pending: [
            { id: "r1-d3", title: "Drop the cache", options: ["a", "b"], recommended: null },
          ],
          findings: [{ id: "r1-eng-native-1", severity: "High", title: "Token leak", disposition: "open" }],
          tasks: [{ id: "r1-t1", title: "Rotate", status: "pending", acceptance: "pnpm test" }],
          acknowledged: true,
        },
      },
      "with an unreadable gstack run": {
        ...completion,
        gstack_run: {
          skill: "review",
          status: "complete",
          run_dir: "/elsewhere",
          check: "outside",
          problems: ["the run directory is outside the working directory"],
        },
      },
      "in a worktree": {
        ...completion,
        branch: "gstack/dispatch-a",
        base: "main",
        base_sha: "0123456789abcdef0123456789abcdef01234567",
        worktree: "/home/u/.gstack/worktrees/baku/dispatch-a",
        files_changed: [{ path: "src/auth.ts", insertions: 12, deletions: 3 }, { path: "logo.png" }],
        landing: "awaiting",
      },
      "failed in a worktree with nothing to land": {
        ...completion,
        status: "failed",
        error_kind: "logic_error",
        error: "I cannot do this task",
        commits: 0,
        commit_shas: [],
        branch: "gstack/dispatch-a",
        base: "main",
        base_sha: "0123456789abcdef0123456789abcdef01234567",
        worktree: "/home/u/.gstack/worktrees/baku/dispatch-a",
        files_changed: [],
        landing: "nothing",
      },
      "zero duration": { ...completion, duration: 0 },
      "budget exhausted": {
        ...completion,
        status: "failed",
        error_kind: "budget_exhausted",
        error: "spent $1.21 of the $1.00 budget",
        cost_usd: 1.21,
        budget_usd: 1,
      },
      "unknown field kept": { ...completion, reviewer: "someone" },
    },
    invalid: {
      "missing status": without(completion, "status"),
      "missing duration": without(completion, "duration"),
      "unknown status": { ...completion, status: "done" },
      "negative duration": { ...completion, duration: -1 },
      "duration as string": { ...completion, duration: "847s" },
      "pr without number": { ...completion, pr: "garrytan/baku" },
      "pr as url": { ...completion, pr: "https://github.com/garrytan/baku/pull/47" },
      "short sha": { ...completion, commit_shas: ["abc12"] },
      "upper-case sha": { ...completion, commit_shas: ["ABC1234"] },
      "negative cost": { ...completion, cost_usd: -0.01 },
      "unknown error kind": { ...completion, error_kind: "gremlins" },
      "budget of nothing": { ...completion, budget_usd: 0 },
      "gstack run with an unknown status": {
        ...completion,
        gstack_run: { skill: "review", status: "awaiting_result", run_dir: "r", check: "valid" },
      },
      "gstack run without a check": {
        ...completion,
        gstack_run: { skill: "review", status: "complete", run_dir: "r" },
      },
      "unknown landing": { ...completion, landing: "merged" },
      "negative insertions": { ...completion, files_changed: [{ path: "a", insertions: -1 }] },
      "file without path": { ...completion, files_changed: [{ insertions: 1, deletions: 0 }] },
      "bad dispatch id": { ...completion, dispatch_id: "auth" },
      "branch starting with '-'": { ...completion, branch: "-x" },
      "base starting with '-'": { ...completion, base: "--x" },
      "worktree with NUL": { ...completion, worktree: "/w\u0000" },
      "changed file with NUL": { ...completion, files_changed: [{ path: "a\u0000b" }] },
      ...dateTimeDocuments(completion, "finished_at", "invalid"),
    },
  },
  handoff: {
    valid: {
      minimal: handoff,
      "agent name as sender": { ...handoff, from: "wintermute", to: "gstack" },
      "picked up": { ...handoff, status: "picked_up", picked_up_at: ts, picked_up_by: "gstack" },
      "resume prompt of 4096 emoji": { ...handoff, resume_prompt: "😀".repeat(4096) },
      "empty resume prompt": { ...handoff, resume_prompt: "" },
      sections: { ...handoff, context: "c", state: "s", what_i_need: "w", id: "handoff-2026_04" },
      "every optional field": {
        ...handoff,
        id: "handoff-2026_04",
        branch: "garrytan/auth-flow",
        status: "picked_up",
        picked_up_at: ts,
        picked_up_by: "gstack",
        project_dir: "~/git/baku",
        source: "projects/baku/checkpoints/auth.md",
        context: "Auth flow half done.\n\tTokens issue.",
        state: "Tests pass.",
        what_i_need: "Finish refresh rotation.",
        resume_prompt: "Resume the auth flow on garrytan/auth-flow.",
      },
      ...dateTimeDocuments(handoff, "timestamp", "valid"),
    },
    invalid: {
      "missing timestamp": without(handoff, "timestamp"),
      "missing to": without(handoff, "to"),
      "upper-case runtime": { ...handoff, from: "GStack" },
      "resume prompt of 4097 characters": { ...handoff, resume_prompt: "x".repeat(4097) },
      "resume prompt of 4097 emoji": { ...handoff, resume_prompt: "😀".repeat(4097) },
      "unknown status": { ...handoff, status: "done" },
      "id with dot segment": { ...handoff, id: "../x" },
      "id starting with dash": { ...handoff, id: "-x" },
      "branch starting with '-'": { ...handoff, branch: "-x" },
      "project_dir with NUL": { ...handoff, project_dir: "/a\u0000" },
      "context with an escape sequence": { ...handoff, context: "\u001b[31mred" },
      "what_i_need with a right-to-left override": { ...handoff, what_i_need: "\u202eoops" },
      "picked_up_by with a line break": { ...handoff, picked_up_by: "a\nb" },
      ...dateTimeDocuments(handoff, "timestamp", "invalid"),
    },
  },
  "activity-entry": {
    valid: {
      "design example": { ...activity, artifacts: ["pr:47"], dispatch: "wintermute" },
      minimal: activity,
      "with source": { ...activity, source: "timeline", outcome: "success", branch: "main" },
      "with cost": { ...activity, cost_usd: 1.25 },
      "skill of 128 emoji": { ...activity, skill: "🔐".repeat(128) },
      "skill with an emoji sequence": { ...activity, skill: "👩‍💻" },
      "every optional field": {
        ...activity,
        artifacts: ["pr:47", "commit:abc1234"],
        dispatch: "wintermute",
        dispatch_id: "dispatch-auth",
        branch: "garrytan/auth-flow",
        outcome: "success",
        session: "3f2a",
        source: "daemon",
        cost_usd: 0.5,
      },
    },
    invalid: {
      "duration as digits string": { ...activity, duration: "847" },
      "missing project": without(activity, "project"),
      "unknown source": { ...activity, source: "email" },
      "empty skill": { ...activity, skill: "" },
      "skill of a lone zero-width joiner": { ...activity, skill: "\u200d" },
      "skill of spaces": { ...activity, skill: "   " },
      "skill of direction marks": { ...activity, skill: "\u200e\u200f" },
      "skill of a byte-order mark": { ...activity, skill: "\ufeff" },
      "skill with a direction mark": { ...activity, skill: "ship\u200f" },
      "skill of 129 emoji": { ...activity, skill: "🔐".repeat(129) },
      "artifacts not strings": { ...activity, artifacts: [47] },
      "negative cost": { ...activity, cost_usd: -1 },
    },
  },
  "timeline-event": {
    valid: {
      started: { skill: "ship", event: "started", ts, session: "abc" },
      completed: { skill: "ship", event: "completed", ts, duration_s: "847", outcome: "success" },
      "zero duration": { skill: "ship", event: "completed", ts, duration_s: "0" },
      "every optional field": {
        skill: "ship",
        event: "completed",
        branch: "main",
        outcome: "success",
        duration_s: "847",
        session: "abc",
        ts,
      },
    },
    invalid: {
      "duration as number": { skill: "ship", event: "completed", ts, duration_s: 847 },
      "duration with unit": { skill: "ship", event: "completed", ts, duration_s: "847s" },
      "empty duration": { skill: "ship", event: "completed", ts, duration_s: "" },
      "unknown event": { skill: "ship", event: "paused", ts },
      "missing ts": { skill: "ship", event: "started" },
    },
  },
  learning: {
    valid: {
      "full line": learning,
      "old line with few fields": { type: "pattern", key: "k", insight: "" },
      "unknown fields kept": { ...learning, embedding_id: 7, tags: ["x"] },
      "confidence bounds": { ...learning, confidence: 10 },
      imported: { ...learning, origin: "openclaw:memory/gstack-baku.md", source: "cross-model" },
      "every optional field": { ...learning, origin: "openclaw:memory/gstack-baku.md" },
    },
    invalid: {
      "confidence 0": { ...learning, confidence: 0 },
      "confidence 11": { ...learning, confidence: 11 },
      "confidence 7.5": { ...learning, confidence: 7.5 },
      "key with space": { ...learning, key: "two words" },
      "key with unicode": { ...learning, key: "clé" },
      "unknown type": { ...learning, type: "context" },
      "unknown source": { ...learning, source: "rumour" },
      "trusted as string": { ...learning, trusted: "true" },
      "missing insight": without(learning, "insight"),
    },
  },
  "checkpoint-frontmatter": {
    valid: {
      typical: {
        status: "in-progress",
        branch: "main",
        timestamp: ts,
        session_duration_s: 1200,
        files_modified: ["a.ts"],
      },
      "duration as digits": { session_duration_s: "1200" },
      "free-form timestamp": { timestamp: "yesterday" },
      empty: {},
    },
    invalid: {
      "negative duration": { session_duration_s: -1 },
      "duration with unit": { session_duration_s: "20m" },
      "files as string": { files_modified: "a.ts" },
      "timestamp as number": { timestamp: 5 },
    },
  },
  routing: {
    valid: {
      "design example": {
        routes: [
          { match: { project: "baku", files: ["calendar/*"] }, load: ["kitsune-context"] },
          { match: { task_type: "security" }, skills: ["gstack-cso", "gstack-careful"] },
        ],
      },
      "version 1": { version: 1, routes: [] },
      "list conditions": { routes: [{ match: { project: ["a", "b"], agent: "gstack" }, skills: ["s"] }] },
      "empty match applies everywhere": { routes: [{ match: {}, load: ["x"] }] },
      "unknown route field kept": { routes: [{ match: {}, skills: ["s"], priority: 3 }] },
      "empty load but skills": { routes: [{ match: {}, load: [], skills: ["s"] }] },
      "every field, conditions as lists": {
        version: 1,
        routes: [
          {
            name: "security",
            description: "Security work gets the CSO's skills.",
            match: {
              project: ["baku", "gstack"],
              task_type: ["security"],
              files: ["src/auth/**"],
              branch: ["main", "release/*"],
              agent: ["gstack", "wintermute"],
            },
            load: ["docs/security.md"],
            skills: ["gstack-cso"],
          },
        ],
      },
      "every condition as one text": {
        routes: [
          {
            match: { project: "baku", task_type: "security", branch: "main", agent: "gstack" },
            skills: ["gstack-cso"],
          },
        ],
      },
    },
    invalid: {
      "misspelt condition": { routes: [{ match: { projcet: "baku" }, skills: ["s"] }] },
      "route without load or skills": { routes: [{ match: { project: "baku" } }] },
      "route with empty load and skills": { routes: [{ match: {}, load: [], skills: [] }] },
      "empty condition list": { routes: [{ match: { project: [] }, skills: ["s"] }] },
      "empty files list": { routes: [{ match: { files: [] }, skills: ["s"] }] },
      "version 2": { version: 2, routes: [] },
      "version 1 as string": { version: "1", routes: [] },
      "routes missing": {},
      "routes as object": { routes: { a: 1 } },
    },
  },
  "daemon-config": {
    valid: {
      "flat keys only": {
        telemetry: "off",
        dispatch_max_concurrent: "4",
        dispatch_trusted_repos: "~/git/*",
        dispatch_require_signature: "true",
      },
      "nested block": { dispatch: { max_concurrent: 4, trusted_repos: ["~/git/*"] } },
      both: { dispatch_max_concurrent: 3, dispatch: { max_concurrent: 2 } },
      "empty file": {},
      "budget both ways": { dispatch_default_budget_usd: "2.50", dispatch: { default_budget_usd: 5 } },
      "agent commands": { dispatch: { agents: { codex: { command: ["codex", "exec", "{prompt}"] } } } },
      "an agent the user names": {
        dispatch: { agents: { "my-agent": { command: ["my-agent"], protocol: "acp" } } },
      },
      "nested bounds": {
        dispatch: { max_concurrent: 32, session_timeout_seconds: 60, heartbeat_seconds: 5 },
      },
      ...urlDocuments({}, "dispatch_clawvisor_url", "valid"),
      ...Object.fromEntries(
        Object.entries(urlCases.valid).map(([name, url]) => [
          `dispatch.clawvisor_url: ${name}`,
          { dispatch: { clawvisor_url: url } },
        ]),
      ),
    },
    invalid: {
      "flat concurrency not a number": { dispatch_max_concurrent: "four" },
      "nested concurrency too high": { dispatch: { max_concurrent: 33 } },
      "nested concurrency zero": { dispatch: { max_concurrent: 0 } },
      "flat boolean misspelt": { dispatch_require_signature: "yes" },
      "flat budget not an amount": { dispatch_default_budget_usd: "five dollars" },
      "nested budget of nothing": { dispatch: { default_budget_usd: 0 } },
      "agent named with capitals": { dispatch: { agents: { "My Agent": { command: ["x"] } } } },
      "empty command": { dispatch: { agents: { codex: { command: [] } } } },
      "dispatch block is a list": { dispatch: [1] },
      ...Object.fromEntries(
        Object.entries(urlCases.invalid).map(([name, url]) => [
          `dispatch.clawvisor_url: ${name}`,
          { dispatch: { clawvisor_url: url } },
        ]),
      ),
    },
  },
  heartbeat: {
    valid: {
      "design example": heartbeat,
      everything: { ...heartbeat, started_at: ts, version: "0.1.0", mode: "local-only", max_concurrent: 2 },
    },
    invalid: {
      "pid 0": { ...heartbeat, pid: 0 },
      "negative queue": { ...heartbeat, queued: -1 },
      "unknown mode": { ...heartbeat, mode: "cloud" },
      "missing active": without(heartbeat, "active"),
      "huge pid beyond safe integers": { ...heartbeat, pid: 2 ** 53 },
    },
  },
  "audit-event": {
    valid: {
      "daemon event": { ts, event: "daemon_started", pid: 1 },
      "rejected with unsafe id": { ts, event: "rejected", dispatch_id: "../../x", reason: "bad id" },
      "detail object": {
        ts,
        event: "failed",
        dispatch_id: "dispatch-x",
        detail: { code: 1, nested: [null] },
      },
    },
    invalid: {
      "unknown event": { ts, event: "exploded" },
      "detail as list": { ts, event: "failed", detail: [1] },
      "fractional pid": { ts, event: "spawned", pid: 1.5 },
    },
  },
  "list-sessions": {
    valid: {
      "design example": listSessions,
      idle: { active: 0, max_concurrent: 1, queued: 0, sessions: [] },
      "queue listed": { ...listSessions, queue: [{ id: "dispatch-next", project: "baku", waiting: 12 }] },
      "with spend": {
        ...listSessions,
        sessions: [{ id: "dispatch-a", project: "p", elapsed: 1, cost_usd: 0.42, budget_usd: 2 }],
      },
      "landings listed": {
        ...listSessions,
        awaiting_landing: [
          {
            id: "dispatch-done",
            project: "baku",
            branch: "gstack/dispatch-done",
            base: "main",
            age_seconds: 90,
            disk_bytes: 4096,
            worktree: "/home/u/.gstack/worktrees/baku/dispatch-done",
          },
        ],
        nothing_to_land: [
          {
            id: "dispatch-empty",
            project: "baku",
            branch: "gstack/dispatch-empty",
            base: "main",
            age_seconds: 30,
            worktree: "/home/u/.gstack/worktrees/baku/dispatch-empty",
          },
        ],
      },
    },
    invalid: {
      "landing without branch": {
        ...listSessions,
        awaiting_landing: [
          { id: "dispatch-done", project: "baku", base: "main", age_seconds: 1, worktree: "/w" },
        ],
      },
      "negative disk bytes": {
        ...listSessions,
        nothing_to_land: [
          {
            id: "dispatch-done",
            project: "baku",
            branch: "b",
            base: "main",
            age_seconds: 1,
            disk_bytes: -1,
            worktree: "/w",
          },
        ],
      },
      "session without project": { ...listSessions, sessions: [{ id: "dispatch-a", elapsed: 1 }] },
      "session with bad id": { ...listSessions, sessions: [{ id: "a", project: "p", elapsed: 1 }] },
      "max_concurrent 0": { ...listSessions, max_concurrent: 0 },
      "negative spend": {
        ...listSessions,
        sessions: [{ id: "dispatch-a", project: "p", elapsed: 1, cost_usd: -0.01 }],
      },
      "sessions missing": without(listSessions, "sessions"),
      "attempt 0": {
        ...listSessions,
        sessions: [{ id: "dispatch-a", project: "p", elapsed: 1, attempt: 0 }],
      },
    },
  },
  "restriction-template": {
    valid: {
      "design example": {
        restrictions: [
          { block: "exec", pattern: "rm -rf /", reason: "never delete root" },
          { block: "read", pattern: "~/.ssh/*", reason: "no credential access" },
        ],
      },
      none: { restrictions: [] },
    },
    invalid: {
      "unknown block": { restrictions: [{ block: "network", pattern: "*", reason: "r" }] },
      "empty pattern": { restrictions: [{ block: "exec", pattern: "", reason: "r" }] },
      "missing reason": { restrictions: [{ block: "exec", pattern: "x" }] },
    },
  },
  "standing-task": {
    valid: {
      "design example": {
        name: "gstack-trusted-repos",
        scope: ["spawn-session", "check-status", "get-completion"],
        repos: ["baku", "gstack", "foundation"],
        restrictions: ["no-main-push", "no-credential-read", "project-dir-only"],
        auto_execute: true,
        session_id: "required",
      },
      "defaults left out": { name: "t", scope: ["list-sessions"] },
    },
    invalid: {
      "empty scope": { name: "t", scope: [] },
      "unknown action": { name: "t", scope: ["delete-repo"] },
      "auto_execute as string": { name: "t", scope: ["list-sessions"], auto_execute: "yes" },
      "unknown session rule": { name: "t", scope: ["list-sessions"], session_id: "never" },
    },
  },
  "callback-error": {
    valid: {
      "each code": { error: "mac_asleep", message: "tunnel unreachable" },
      "queue full with retry": { error: "queue_full", message: "2 of 2 slots busy", retry_after_seconds: 60 },
      "tunnel down": { error: "tunnel_down", message: "ngrok is not running", dispatch_id: "dispatch-x" },
      "daemon crashed": { error: "daemon_crashed", message: "no heartbeat for 5 minutes" },
      "refused input with its rule": {
        error: "untrusted_repo",
        message: "project_dir /tmp/x is outside the trusted repos",
        dispatch_id: "dispatch-x",
        rule: "trusted-repos",
      },
    },
    invalid: {
      "unknown code": { error: "on_fire", message: "m" },
      "missing message": { error: "queue_full" },
      "negative retry": { error: "queue_full", message: "m", retry_after_seconds: -5 },
    },
  },
  "completion-callback": {
    valid: {
      minimal: {
        type: "gstack.dispatch.completion",
        dispatch_id: "dispatch-auth",
        sent_at: "2026-11-23T10:00:00Z",
        completion,
      },
      "with summary and judgment": {
        type: "gstack.dispatch.completion",
        dispatch_id: "dispatch-auth",
        sent_at: "2026-11-23T10:00:00+01:00",
        completion: { ...completion, reply_to: { runtime: "openclaw", session_key: "agent:main:main" } },
        summary: "Added the auth middleware.",
        needs_judgment: ["Should the session length be 30 days?"],
        report_markdown: "# Dispatch dispatch-auth",
      },
    },
    invalid: {
      "wrong type": {
        type: "gstack.completion",
        dispatch_id: "dispatch-auth",
        sent_at: "2026-11-23T10:00:00Z",
        completion,
      },
      "completion missing": {
        type: "gstack.dispatch.completion",
        dispatch_id: "dispatch-auth",
        sent_at: "2026-11-23T10:00:00Z",
      },
      "empty judgment item": {
        type: "gstack.dispatch.completion",
        dispatch_id: "dispatch-auth",
        sent_at: "2026-11-23T10:00:00Z",
        completion,
        needs_judgment: [""],
      },
    },
  },
  "spawn-request": {
    valid: {
      "dispatch as text": { dispatch: '{"id":"dispatch-a","project":"p"}' },
      "dispatch as object": { dispatch: { id: "dispatch-a", project: "p" } },
    },
    invalid: {
      "dispatch missing": {},
      "dispatch as number": { dispatch: 7 },
      "empty text": { dispatch: "" },
      "dispatch as array": { dispatch: [1, 2] },
    },
  },
  "spawn-answer": {
    valid: {
      queued: { accepted: true, dispatch_id: "dispatch-a", position: 3, status: "queued" },
    },
    invalid: {
      "not accepted": { accepted: false, dispatch_id: "dispatch-a", position: 1, status: "queued" },
      "position zero": { accepted: true, dispatch_id: "dispatch-a", position: 0, status: "queued" },
      "unsafe id": { accepted: true, dispatch_id: "../x", position: 1, status: "queued" },
    },
  },
  "dispatch-snapshot": {
    valid: {
      running: {
        dispatch_id: "dispatch-a",
        status: "running",
        terminal: false,
        message: "still running (turn 4)",
        attempt: 2,
        progress: { turns: 4, tool_uses: 9, last_action: "Edit src/a.ts", cost_usd: 0.75, budget_usd: 2 },
        run: { attempt: 2, commit_shas: ["abcdef1"], artifacts: ["commit:abcdef1"] },
        earlier_runs: { attempts: 1, commit_shas: ["1234567"] },
      },
      terminal: {
        dispatch_id: "dispatch-auth",
        status: "completed",
        terminal: true,
        message: "completed in 847 s",
        report: completion,
        report_markdown: "# Dispatch dispatch-auth",
      },
      pending: { dispatch_id: "dispatch-a", status: "pending", terminal: false, message: "not taken yet" },
    },
    invalid: {
      "unknown status": { dispatch_id: "dispatch-a", status: "done", terminal: true, message: "m" },
      "bad commit": {
        dispatch_id: "dispatch-a",
        status: "running",
        terminal: false,
        message: "m",
        run: { attempt: 1, commit_shas: ["HEAD"], artifacts: [] },
      },
      "report without status": {
        dispatch_id: "dispatch-a",
        status: "completed",
        terminal: true,
        message: "m",
        report: { dispatch_id: "dispatch-a" },
      },
      "empty message": { dispatch_id: "dispatch-a", status: "queued", terminal: false, message: "" },
      "branch starting with '-'": {
        dispatch_id: "dispatch-a",
        status: "running",
        terminal: false,
        message: "m",
        branch: "-x",
      },
      "budget of nothing": {
        dispatch_id: "dispatch-a",
        status: "running",
        terminal: false,
        message: "m",
        progress: { turns: 1, tool_uses: 0, budget_usd: 0 },
      },
    },
  },
  "cancel-request": {
    valid: {
      minimal: { dispatch_id: "dispatch-a" },
      "with reason": { dispatch_id: "dispatch-a", reason: "the user changed their mind" },
    },
    invalid: {
      "traversal id": { dispatch_id: "dispatch-../../etc" },
      "missing id": { reason: "r" },
      "reason with a bell": { dispatch_id: "dispatch-a", reason: "why\u0007" },
    },
  },
  "cancel-answer": {
    valid: {
      cancelling: { dispatch_id: "dispatch-a", outcome: "cancelling", changed: true },
      finished: { dispatch_id: "dispatch-a", outcome: "finished", changed: false, status: "completed" },
    },
    invalid: {
      "unknown outcome": { dispatch_id: "dispatch-a", outcome: "maybe", changed: true },
      "changed missing": { dispatch_id: "dispatch-a", outcome: "cancelled" },
    },
  },
  "land-request": {
    valid: {
      land: { dispatch_id: "dispatch-a", action: "land" },
      pr: { dispatch_id: "dispatch-a", action: "land", pr: true },
      discard: { dispatch_id: "dispatch-a", action: "discard", force: true },
    },
    invalid: {
      "unknown action": { dispatch_id: "dispatch-a", action: "merge" },
      "traversal id": { dispatch_id: "dispatch-../x", action: "land" },
      "force not boolean": { dispatch_id: "dispatch-a", action: "discard", force: "yes" },
    },
  },
  "land-answer": {
    valid: {
      landed: {
        dispatch_id: "dispatch-a",
        landing: "landed",
        changed: true,
        how: "fast-forward",
        branch: "gstack/dispatch-a",
        base: "main",
        commit: "0123456789abcdef0123456789abcdef01234567",
        message: "landed gstack/dispatch-a into main (fast-forward)",
      },
      discarded: {
        dispatch_id: "dispatch-a",
        landing: "discarded",
        changed: false,
        message: "already discarded",
      },
    },
    invalid: {
      "no message": { dispatch_id: "dispatch-a", landing: "landed", changed: true },
      "unknown landing": { dispatch_id: "dispatch-a", landing: "merged", changed: true, message: "m" },
      "base starting with '-'": {
        dispatch_id: "dispatch-a",
        landing: "landed",
        changed: true,
        base: "-x",
        message: "m",
      },
    },
  },
  "answer-request": {
    valid: {
      approve: { dispatch_id: "dispatch-a", answer: "approve" },
      revise: { dispatch_id: "dispatch-a", answer: "revise", text: "use tabs", round: 1 },
      reject: { dispatch_id: "dispatch-a", answer: "reject", text: "not now" },
      "revise on several lines": {
        dispatch_id: "dispatch-a",
        answer: "revise",
        text: "two things:\n\t- a\r\n\t- b",
      },
    },
    invalid: {
      "unknown answer": { dispatch_id: "dispatch-a", answer: "yes" },
      "round zero": { dispatch_id: "dispatch-a", answer: "approve", round: 0 },
      "traversal id": { dispatch_id: "dispatch-../x", answer: "approve" },
      "text with an escape sequence": { dispatch_id: "dispatch-a", answer: "revise", text: "\u001b[2Jdo it" },
      "text with a right-to-left override": { dispatch_id: "dispatch-a", answer: "reject", text: "\u202eno" },
    },
  },
  "answer-answer": {
    valid: {
      approved: {
        dispatch_id: "dispatch-a",
        answer: "approve",
        round: 1,
        status: "queued",
        message: "approved plan 1; queued to carry it out",
      },
    },
    invalid: {
      "no message": { dispatch_id: "dispatch-a", answer: "approve", round: 1, status: "queued" },
    },
  },
  "awaiting-notice": {
    valid: {
      plan: {
        dispatch_id: "dispatch-a",
        status: "awaiting",
        project: "acme-widget",
        kind: "plan",
        since: "2026-11-23T10:00:00Z",
        expires_at: "2026-11-26T10:00:00Z",
        round: 1,
        summary: "## Plan\n1. Add plan.txt",
        how_to_answer: "gstack-dispatch answer dispatch-a approve",
        reply_to: { runtime: "openclaw", session_key: "agent:main:main" },
      },
      gate: {
        dispatch_id: "dispatch-a",
        status: "awaiting",
        kind: "gate",
        since: "2026-11-23T10:00:00Z",
        expires_at: "2026-11-26T10:00:00Z",
        round: 2,
        summary: "1. d1: Which port?",
        how_to_answer: "gstack-dispatch answer dispatch-a all",
        items: [{ label: "d1", title: "Which port?", options: ["80", "8080"], recommended: "8080" }],
      },
    },
    invalid: {
      "terminal status": {
        dispatch_id: "dispatch-a",
        status: "completed",
        kind: "plan",
        since: "2026-11-23T10:00:00Z",
        expires_at: "2026-11-26T10:00:00Z",
        round: 1,
        summary: "s",
        how_to_answer: "h",
      },
      "round zero": {
        dispatch_id: "dispatch-a",
        status: "awaiting",
        kind: "plan",
        since: "2026-11-23T10:00:00Z",
        expires_at: "2026-11-26T10:00:00Z",
        round: 0,
        summary: "s",
        how_to_answer: "h",
      },
    },
  },
  "awaiting-callback": {
    valid: {
      plan: {
        type: "gstack.dispatch.awaiting",
        dispatch_id: "dispatch-a",
        sent_at: "2026-11-23T10:00:01Z",
        notice: {
          dispatch_id: "dispatch-a",
          status: "awaiting",
          kind: "plan",
          since: "2026-11-23T10:00:00Z",
          expires_at: "2026-11-26T10:00:00Z",
          round: 1,
          summary: "## Plan\n1. Add plan.txt",
          how_to_answer: "gstack-dispatch answer dispatch-a approve",
          reply_to: { runtime: "openclaw", session_key: "agent:main:main" },
        },
        delivered_by: "build-box",
      },
    },
    invalid: {
      "completion type": {
        type: "gstack.dispatch.completion",
        dispatch_id: "dispatch-a",
        sent_at: "2026-11-23T10:00:01Z",
        notice: {
          dispatch_id: "dispatch-a",
          status: "awaiting",
          kind: "plan",
          since: "2026-11-23T10:00:00Z",
          expires_at: "2026-11-26T10:00:00Z",
          round: 1,
          summary: "s",
          how_to_answer: "h",
        },
      },
      "notice missing": {
        type: "gstack.dispatch.awaiting",
        dispatch_id: "dispatch-a",
        sent_at: "2026-11-23T10:00:01Z",
      },
    },
  },
  "brief-draft": {
    valid: {
      "from a checkpoint": {
        draft_id: "draft-20261127T090000-ab12cd34",
        created_at: "2026-11-27T09:00:00Z",
        project: "acme-baku",
        project_dir: "/home/me/git/baku",
        task: "Finish the token refresh: the 401 retry loop in auth/session.ts is left.",
        source: "checkpoint",
        source_ref: "checkpoint:acme-baku/20261126-173000-auth-debugging",
        dispatch_id: "dispatch-20261127T090000-ab12cd34",
        base: "fix/auth",
        budget_usd: 5,
        mode: "plan",
        learnings: ["auth tokens live in the keychain, not in .env"],
        reply_to: { runtime: "openclaw", session_key: "agent:main:main" },
      },
      sent: {
        draft_id: "draft-a",
        created_at: "2026-11-27T09:00:00Z",
        project: "baku",
        project_dir: "/home/me/git/baku",
        task: "t",
        source: "open-work",
        dispatch_id: "dispatch-a",
        sent: { dispatch_id: "dispatch-a", at: "2026-11-27T09:01:00Z" },
      },
    },
    invalid: {
      "not a draft id": {
        draft_id: "dispatch-a",
        created_at: "2026-11-27T09:00:00Z",
        project: "baku",
        project_dir: "/home/me/git/baku",
        task: "t",
        source: "checkpoint",
        dispatch_id: "dispatch-a",
      },
      "empty task": {
        draft_id: "draft-a",
        created_at: "2026-11-27T09:00:00Z",
        project: "baku",
        project_dir: "/home/me/git/baku",
        task: "",
        source: "checkpoint",
        dispatch_id: "dispatch-a",
      },
      "branch as an option": {
        draft_id: "draft-a",
        created_at: "2026-11-27T09:00:00Z",
        project: "baku",
        project_dir: "/home/me/git/baku",
        task: "t",
        source: "checkpoint",
        dispatch_id: "dispatch-a",
        base: "-rf",
      },
    },
  },
  "service-health": {
    valid: {
      running: { ok: true, daemon: "running", api_version: 1, pid: 4242, mode: "local-only" },
      down: {
        ok: false,
        daemon: "not_running",
        api_version: 1,
        error: "daemon_crashed",
        message: "no heartbeat since 2026-11-23T10:00:00Z",
      },
    },
    invalid: {
      "unknown daemon state": { ok: true, daemon: "asleep", api_version: 1 },
      "api version zero": { ok: true, daemon: "running", api_version: 0 },
    },
  },
  "gstack-run": {
    valid: {
      minimal: gstackRun,
      everything: {
        ...gstackRun,
        required_phases: ["ceo"],
        phases: {
          ceo: { snapshot: sha, native: { status: "completed", model: "m" }, outside: { status: "skipped" } },
        },
        counts: { decisions: 1, findings: 0, tasks: 0 },
        base: "main",
        host: "claude",
        session_kind: "unattended",
        gate_rev: 1,
        gate: {},
        consumed_by: [{ consumer: "dispatch-a", at: ts }],
        deviations: [],
      },
      "unknown field kept": { ...gstackRun, wave: 3 },
    },
    invalid: {
      "version 2": { ...gstackRun, schema_version: 2 },
      "unknown status": { ...gstackRun, status: "done" },
      "artifact without hash": { ...gstackRun, artifacts: { "plan.md": { path: "plan.md" } } },
      "missing artifacts": without(gstackRun, "artifacts"),
      "consumer without time": { ...gstackRun, consumed_by: [{ consumer: "dispatch-a" }] },
    },
  },
  "gstack-decision": {
    valid: {
      pending: gstackDecision,
      answered: { ...gstackDecision, status: "approved", chosen: "a", answered_at: ts, reply: "all" },
      "no recommendation": { ...gstackDecision, recommended: null },
    },
    invalid: {
      "gate revision zero": { ...gstackDecision, gate_rev: 0 },
      "unknown kind": { ...gstackDecision, kind: "guess" },
      "options missing": without(gstackDecision, "options"),
      "recommended missing": without(gstackDecision, "recommended"),
    },
  },
  "gstack-finding": {
    valid: {
      minimal: gstackFinding,
      everything: {
        ...gstackFinding,
        model: "m",
        file: "src/a.ts",
        line: 12,
        disposition: "accepted",
        resolution: "fixed in t1",
        plan_items: ["p1"],
        native_counterpart: null,
        source: "review",
      },
    },
    invalid: {
      "lower-case severity": { ...gstackFinding, severity: "high" },
      "fractional line": { ...gstackFinding, line: 1.5 },
      "unknown voice": { ...gstackFinding, voice: "third" },
    },
  },
  "gstack-task": {
    valid: {
      minimal: gstackTask,
      everything: {
        ...gstackTask,
        pr: "pr1",
        item: "i",
        tier: 2,
        priority: "P1",
        component: "api",
        files: ["a.ts"],
      },
    },
    invalid: {
      "version 1": { ...gstackTask, schema_version: 1 },
      "acceptance missing": without(gstackTask, "acceptance"),
      "unknown status": { ...gstackTask, status: "started" },
    },
  },
};

import { whenText } from "../person-message";
import type { DiffFile } from "./diff";
import type { DispatchView, ListedDispatch } from "./dispatch-view";
import { highlightLine, languageOf } from "./highlight";

/** Text made safe for HTML content (not attributes): the fewest bytes for a diff's lines. */
export function escapeText(text: string): string {
  return text.replace(/[&<>]/g, (char) => (char === "&" ? "&amp;" : char === "<" ? "&lt;" : "&gt;"));
}

/** Text made safe for HTML content and quoted attributes. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

/** A file with more diff lines than this is shown collapsed. */
export const OPEN_FILE_LINES = 300;
/** At most this many lines of one file are put into the page; the rest is named, not sent. */
export const MAX_FILE_LINES = 2000;
/** At most this many diff lines in one page. */
export const MAX_PAGE_LINES = 20_000;

export const PAGE_STYLE = `
:root{color-scheme:light dark;--bg:#fff;--fg:#1a1a1a;--muted:#555;--line:#d0d0d0;--card:#f5f5f5;--add:#e6ffec;--addfg:#0a4b1c;--del:#ffebe9;--delfg:#7a1414;--hunk:#eef3ff;--accent:#0b57d0;--warn:#8a4b00;--ok:#0a6b2a;--tk:#8a1f9e;--ts:#0a5c2a;--tn:#0550ae;--tc:#5a5a5a;--ty:#8a3a00;--tt:#1d5c8f;--th:#0b3d91}
@media (prefers-color-scheme:dark){:root{--bg:#111;--fg:#ececec;--muted:#b0b0b0;--line:#3a3a3a;--card:#1c1c1c;--add:#10301a;--addfg:#a6f0b8;--del:#3a1416;--delfg:#ffb4ae;--hunk:#18223a;--accent:#8ab4f8;--warn:#ffc46b;--ok:#7ee2a0;--tk:#e0a8ff;--ts:#a5d6ff;--tn:#79c0ff;--tc:#a8b0ba;--ty:#ffb870;--tt:#8ee59a;--th:#9ecbff}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;overflow-wrap:anywhere}
main{max-width:60rem;margin:0 auto;padding:12px}
h1{font-size:1.3rem;margin:.2rem 0}h2{font-size:1.1rem;margin:1.4rem 0 .5rem;border-bottom:1px solid var(--line);padding-bottom:.2rem}
.muted{color:var(--muted)}.badge{display:inline-block;padding:.1rem .5rem;border-radius:1rem;border:1px solid currentColor;font-size:.85rem;font-weight:600}
.wait{color:var(--warn)}.good{color:var(--ok)}
pre,code{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{margin:0;padding:8px;overflow-x:auto;background:var(--card);border:1px solid var(--line);border-radius:6px;overflow-wrap:normal}
.w{white-space:pre-wrap;overflow-wrap:anywhere}.d span{display:block;white-space:pre}.d .a{background:var(--add);color:var(--addfg)}.d .r{background:var(--del);color:var(--delfg)}.d .h{background:var(--hunk);color:var(--muted)}
.d i{font-style:normal}.d i.k{color:var(--tk)}.d i.s{color:var(--ts)}.d i.n{color:var(--tn)}.d i.c{color:var(--tc);font-style:italic}.d i.y{color:var(--ty)}.d i.t{color:var(--tt)}.d i.m{color:var(--th);font-weight:600}
details{margin:.4rem 0;border:1px solid var(--line);border-radius:6px;background:var(--card)}
summary{padding:.5rem;cursor:pointer;min-height:44px}details>pre{border:0;border-top:1px solid var(--line);border-radius:0}
.note{padding:.5rem;border-left:4px solid var(--warn);background:var(--card);margin:.5rem 0}
.done{border-left-color:var(--ok)}
form{margin:.5rem 0}label{display:block;font-weight:600;margin:.3rem 0}
textarea,input[type=text]{width:100%;font:inherit;padding:.5rem;border:1px solid var(--line);border-radius:6px;background:var(--bg);color:var(--fg)}
button{font:inherit;font-weight:600;min-height:44px;padding:.5rem 1rem;margin:.25rem .25rem .25rem 0;border-radius:6px;border:1px solid var(--accent);background:var(--accent);color:var(--bg);cursor:pointer}
button.alt{background:transparent;color:var(--accent)}
button:focus-visible,summary:focus-visible,a:focus-visible,textarea:focus-visible{outline:3px solid var(--warn);outline-offset:2px}
a{color:var(--accent)}
ol,ul{padding-left:1.3rem}.list{list-style:none;padding:0}.list li{padding:.4rem 0;border-bottom:1px solid var(--line)}.list a{display:inline-block;min-height:44px;padding:.6rem 0}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.3rem;border-bottom:1px solid var(--line);vertical-align:top}
`;

function page(title: string, body: string, script = "", nonce = ""): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="no-referrer"><title>${escapeHtml(title)}</title><style>${PAGE_STYLE}</style></head><body><main>${body}</main>${script ? `<script nonce="${nonce}">${script}</script>` : ""}</body></html>`;
}

/** The words a person reads for where a dispatch stands. */
export function standing(view: Pick<DispatchView, "state" | "landing" | "completion" | "notice">): {
  word: string;
  tone: "" | "wait" | "good";
} {
  const landing = view.landing;
  if (landing === "landed") return { word: "landed", tone: "good" };
  if (landing === "pr_opened") return { word: "pull request opened", tone: "good" };
  if (landing === "discarded") return { word: "discarded", tone: "" };
  const status = view.state?.status;
  if (status === "awaiting") return { word: "waiting for you", tone: "wait" };
  if (status === "queued") return { word: "queued", tone: "" };
  if (status === "running" || status === "retrying") return { word: "running", tone: "" };
  const outcome = view.completion?.status;
  if (outcome === "completed" && landing === "awaiting") return { word: "ready to land", tone: "wait" };
  if (outcome && outcome !== "completed") return { word: outcome, tone: "" };
  return { word: "finished", tone: "" };
}

export interface PageForms {
  /** The URL forms post to (it carries the capability). */
  action: string;
  csrf: string;
  /** The idempotency key of this rendering's forms: a double tap sends it twice, one action runs. */
  key: string;
  /** The URL the running page polls for its progress. */
  tail: string;
  nonce: string;
}

export interface Flash {
  ok: boolean;
  text: string;
}

function money(value: number | undefined): string {
  return value === undefined ? "?" : `$${value.toFixed(2)}`;
}

function hidden(forms: PageForms, action: string, extra = ""): string {
  return `<input type="hidden" name="csrf" value="${escapeHtml(forms.csrf)}"><input type="hidden" name="key" value="${escapeHtml(forms.key)}-${action}"><input type="hidden" name="do" value="${action}">${extra}`;
}

function actionsHtml(view: DispatchView, forms: PageForms): string {
  const parts: string[] = [];
  const notice = view.notice;
  if (notice) {
    const round = `<input type="hidden" name="round" value="${notice.round}">`;
    if (notice.kind === "plan") {
      parts.push(
        `<form method="post" action="${escapeHtml(forms.action)}">${hidden(forms, "approve", round)}<button type="submit">Approve the plan</button></form>`,
        `<form method="post" action="${escapeHtml(forms.action)}">${hidden(forms, "revise", round)}<label for="revise-text">What to change</label><textarea id="revise-text" name="text" rows="3" required></textarea><button type="submit" class="alt">Revise</button></form>`,
      );
    } else {
      parts.push(
        `<form method="post" action="${escapeHtml(forms.action)}">${hidden(forms, "reply", round)}<label for="reply-text">Your decisions (all, d3b, all except d3b)</label><input type="text" id="reply-text" name="text" value="all" required><button type="submit">Send the decisions</button></form>`,
      );
    }
    parts.push(
      `<form method="post" action="${escapeHtml(forms.action)}">${hidden(forms, "reject", round)}<label for="reject-text">Why reject it</label><textarea id="reject-text" name="text" rows="2" required></textarea><button type="submit" class="alt">Reject</button></form>`,
    );
  } else if (view.state?.status === "finished" && view.landing === "awaiting") {
    const into = view.base ? ` into ${escapeHtml(view.base)}` : "";
    parts.push(
      `<form method="post" action="${escapeHtml(forms.action)}">${hidden(forms, "land")}<button type="submit">Land${into}</button></form>`,
      `<form method="post" action="${escapeHtml(forms.action)}">${hidden(forms, "pr")}<button type="submit" class="alt">Open a pull request</button></form>`,
    );
  }
  if (view.state?.status === "finished" && (view.landing === "awaiting" || view.landing === "nothing")) {
    parts.push(
      `<form method="post" action="${escapeHtml(forms.action)}">${hidden(forms, "discard")}<button type="submit" class="alt">Discard the work</button></form>`,
    );
  }
  return parts.length > 0 ? `<h2 id="act">What to do</h2>${parts.join("")}` : "";
}

function diffHtml(view: DispatchView): string {
  if (view.diff.length === 0)
    return `<p class="muted">${escapeHtml(view.diffNote ?? "No changes against the base.")}</p>`;
  let budget = MAX_PAGE_LINES;
  const rows = view.diff.map((file) =>
    fileHtml(
      file,
      () => budget,
      (used) => (budget -= used),
    ),
  );
  const added = view.diff.reduce((sum, file) => sum + file.added, 0);
  const removed = view.diff.reduce((sum, file) => sum + file.removed, 0);
  const cut = view.diffCut ? `<p class="note">The diff is larger than the page reads; it is cut.</p>` : "";
  return `<p>${view.diff.length} file${view.diff.length === 1 ? "" : "s"}, <span class="good">+${added}</span> <span class="wait">−${removed}</span> against ${escapeHtml(view.base ?? "the base")}</p>${cut}${rows.join("")}`;
}

function fileHtml(file: DiffFile, left: () => number, spend: (used: number) => void): string {
  const name = file.from ? `${escapeHtml(file.from)} → ${escapeHtml(file.path)}` : escapeHtml(file.path);
  const counts = file.binary ? "binary" : `+${file.added} −${file.removed}`;
  const head = `<summary><code>${name}</code> <span class="muted">${file.status}, ${counts}</span></summary>`;
  if (file.binary) return `<details>${head}<p class="note">A binary file: not shown.</p></details>`;
  const room = Math.min(MAX_FILE_LINES, left());
  const shown = file.lines.slice(0, Math.max(0, room));
  spend(shown.length);
  // Runs of lines of one kind share one element: a few tags per hunk, not one per line.
  const runs: string[] = [];
  const language = languageOf(file.path);
  let kind: string | undefined;
  let run: string[] = [];
  const flush = () => {
    if (run.length > 0) runs.push(`<span${kind ? ` class="${kind}"` : ""}>${run.join("\n")}</span>`);
    run = [];
  };
  for (const line of shown) {
    const next = line.startsWith("+") ? "a" : line.startsWith("-") ? "r" : line.startsWith("@@") ? "h" : "";
    if (next !== kind) flush();
    kind = next;
    // The marker stays plain; the code after it is highlighted (a hunk header is not code).
    run.push(
      next === "h" || !/^[-+ ]/.test(line)
        ? escapeText(line)
        : `${line[0]}${highlightLine(line.slice(1), language)}`,
    );
  }
  flush();
  const body = runs.join("");
  const more =
    file.lines.length > shown.length
      ? `<p class="note">${file.lines.length - shown.length} more lines of this file are not shown here.</p>`
      : "";
  const open = file.lines.length <= OPEN_FILE_LINES ? " open" : "";
  return `<details${open}>${head}<pre class="d">${body}</pre>${more}</details>`;
}

const TIMELINE_WORDS: Record<string, string> = {
  received: "received",
  validated: "checked",
  queued: "queued",
  worktree_created: "worktree made",
  spawned: "agent started",
  retried: "retried",
  awaiting: "waiting for you",
  answered: "answered",
  completed: "finished",
  failed: "failed",
  cancelled: "cancelled",
  timeout: "ran out of time",
  landed: "landed",
  discarded: "discarded",
  callback_sent: "report sent",
};

function timelineHtml(view: DispatchView): string {
  const events = view.timeline.filter((event) => TIMELINE_WORDS[event.event]);
  if (events.length === 0) return `<p class="muted">Nothing recorded yet.</p>`;
  return `<ol>${events
    .map(
      (event) =>
        `<li><time datetime="${escapeHtml(event.ts)}">${escapeHtml(event.ts.replace("T", " ").slice(0, 19))}</time> ${escapeHtml(TIMELINE_WORDS[event.event] ?? event.event)}${event.reason ? ` <span class="muted">(${escapeHtml(event.reason.slice(0, 200))})</span>` : ""}</li>`,
    )
    .join("")}</ol>`;
}

const OUTCOME_TONE = { passed: "good", failed: "wait", unknown: "muted" } as const;

function testsHtml(view: DispatchView): string {
  if (view.tests.length === 0) return "";
  const items = view.tests.map((run) => {
    const exit = run.exitCode !== undefined && run.exitCode !== 0 ? `, exit ${run.exitCode}` : "";
    const note = run.note ? ` <span class="muted">(${escapeHtml(run.note)})</span>` : "";
    const from = run.source === "report" ? ` <span class="muted">(as the report says)</span>` : "";
    return `<li><code>${escapeHtml(run.command.length > 200 ? `${run.command.slice(0, 199)}…` : run.command)}</code> <strong class="${OUTCOME_TONE[run.outcome]}">${run.outcome}${exit}</strong>${note}${from}</li>`;
  });
  return `<h2>Tests</h2><ul id="tests">${items.join("")}</ul>`;
}

function planHtml(view: DispatchView): string {
  const notice = view.notice;
  if (!notice) return "";
  if (notice.kind === "plan")
    return `<h2>The plan${notice.round > 1 ? ` (round ${notice.round})` : ""}</h2><pre class="w">${escapeHtml(notice.summary)}</pre><p class="muted">Unanswered, it is cancelled ${escapeHtml(whenText(notice.expires_at))}.</p>`;
  const items = notice.items ?? [];
  const list = items
    .map((item) => {
      const options = item.options
        .map(
          (option, index) =>
            `<li><code>${escapeHtml(item.label)}${String.fromCharCode(97 + index)}</code> ${escapeHtml(option)}${option === item.recommended ? " <strong>(recommended)</strong>" : ""}</li>`,
        )
        .join("");
      return `<li><strong>${escapeHtml(item.label)}</strong>: ${escapeHtml(item.title)}<ul>${options}</ul></li>`;
    })
    .join("");
  return `<h2>The gate's decisions (revision ${notice.round})</h2>${list ? `<ol>${list}</ol>` : `<pre>${escapeHtml(notice.summary)}</pre>`}`;
}

function resultHtml(view: DispatchView): string {
  const run = view.completion?.gstack_run;
  if (!run) return "";
  const findings = (run.findings ?? [])
    .map(
      (finding) =>
        `<li><strong>${escapeHtml(finding.severity)}</strong> ${escapeHtml(finding.title)}${finding.disposition ? ` <span class="muted">(${escapeHtml(finding.disposition)})</span>` : ""}</li>`,
    )
    .join("");
  const tasks = (run.tasks ?? [])
    .map(
      (task) =>
        `<li>${escapeHtml(task.title)}: <strong>${escapeHtml(task.status)}</strong>${task.acceptance ? ` <span class="muted">(${escapeHtml(task.acceptance)})</span>` : ""}</li>`,
    )
    .join("");
  return `<h2>What gstack reported</h2><p>${escapeHtml(run.skill)}: <strong>${escapeHtml(run.status)}</strong> <span class="muted">(run ${escapeHtml(run.check)})</span></p>${findings ? `<h3>Findings</h3><ul>${findings}</ul>` : ""}${tasks ? `<h3>Tasks and their checks</h3><ul>${tasks}</ul>` : ""}`;
}

function costHtml(view: DispatchView): string {
  const cost = view.completion?.cost_usd ?? view.state?.progress?.costUsd;
  const budget = view.completion?.budget_usd ?? view.state?.budget_usd;
  if (cost === undefined && budget === undefined) return "";
  const share = cost !== undefined && budget ? Math.min(100, Math.round((cost / budget) * 100)) : undefined;
  return `<p>Cost: <strong>${money(cost)}</strong>${budget !== undefined ? ` of ${money(budget)} budget` : ""}${share !== undefined ? ` <meter min="0" max="100" value="${share}" aria-label="share of the budget spent">${share}%</meter>` : ""}</p>`;
}

function progressHtml(view: DispatchView): string {
  const status = view.state?.status;
  if (status !== "running" && status !== "retrying" && status !== "queued") return "";
  const progress = view.state?.progress;
  const line = progress
    ? `${progress.turns} turns, ${progress.toolUses} tool uses${progress.lastAction ? `, last: ${progress.lastAction}` : ""}`
    : "Not started yet.";
  return `<h2>Progress</h2><p id="tail-line" aria-live="polite">${escapeHtml(line)}</p><pre id="tail-text">${escapeHtml(progress?.lastText ?? "")}</pre>`;
}

/** The script of a running page: polls its progress and reloads once the dispatch moves on. */
function tailScript(forms: PageForms, status: string): string {
  return `(function(){var u=${JSON.stringify(forms.tail)},s=${JSON.stringify(status)};function t(){fetch(u,{cache:"no-store"}).then(function(r){return r.json()}).then(function(j){if(j.status!==s){location.reload();return}var l=document.getElementById("tail-line"),x=document.getElementById("tail-text");if(l)l.textContent=j.line;if(x)x.textContent=j.text||""}).catch(function(){}).finally(function(){setTimeout(t,3000)})}setTimeout(t,3000)})();`;
}

export function renderDispatchPage(
  view: DispatchView,
  forms: PageForms,
  flash?: Flash,
  listLink?: string,
): string {
  const where = standing(view);
  const completion = view.completion;
  const title = view.task ? (view.task.split("\n")[0]?.slice(0, 120) ?? view.id) : view.id;
  const parts: string[] = [
    `<p class="muted">${escapeHtml(view.project)} · dispatch ${escapeHtml(view.id.slice(-8))}${listLink ? ` · <a href="${escapeHtml(listLink)}">all dispatches</a>` : ""}</p>`,
    `<h1>${escapeHtml(title)}</h1>`,
    `<p><span class="badge ${where.tone}" id="standing">${escapeHtml(where.word)}</span>${view.branch ? ` <span class="muted">on</span> <code>${escapeHtml(view.branch)}</code>` : ""}${view.landedCommit ? ` <span class="muted">as</span> <code>${escapeHtml(view.landedCommit.slice(0, 12))}</code>` : ""}</p>`,
  ];
  if (flash)
    parts.push(
      `<p class="note${flash.ok ? " done" : ""}" role="status" id="flash">${escapeHtml(flash.text)}</p>`,
    );
  if (completion?.error)
    parts.push(`<p class="note">What happened: ${escapeHtml(completion.error.split("\n")[0] ?? "")}</p>`);
  // A plan or a gate is read before the answer; a landing's buttons come first, the diff below.
  parts.push(costHtml(view), planHtml(view), actionsHtml(view, forms), progressHtml(view));
  parts.push(`<h2>Changes</h2>`, diffHtml(view));
  if (view.commits.length > 0)
    parts.push(
      `<h2>Commits</h2><ul>${view.commits.map((commit) => `<li><code>${escapeHtml(commit.sha.slice(0, 8))}</code> ${escapeHtml(commit.subject)} <span class="muted">${escapeHtml(commit.author)}</span></li>`).join("")}</ul>`,
    );
  parts.push(testsHtml(view), resultHtml(view));
  parts.push(`<h2>Timeline</h2>`, timelineHtml(view));
  if (view.report)
    parts.push(
      `<h2>The full report</h2><details><summary>Show the report</summary><pre>${escapeHtml(view.report)}</pre></details>`,
    );
  const status = view.state?.status ?? "";
  const live = status === "running" || status === "retrying" || status === "queued";
  return page(`${where.word}: ${title}`, parts.join(""), live ? tailScript(forms, status) : "", forms.nonce);
}

export function renderListPage(rows: { dispatch: ListedDispatch; link: string }[], now: Date): string {
  const items = rows.map(({ dispatch, link }) => {
    const where = standing({
      state: { status: dispatch.status } as DispatchView["state"],
      ...(dispatch.landing ? { landing: dispatch.landing } : {}),
      ...(dispatch.outcome ? { completion: { status: dispatch.outcome } as DispatchView["completion"] } : {}),
    });
    const age = Math.max(0, Math.round((now.getTime() - Date.parse(dispatch.queuedAt)) / 60_000));
    const ageText =
      age < 60 ? `${age} min` : age < 2880 ? `${Math.round(age / 60)} h` : `${Math.round(age / 1440)} d`;
    const cost =
      dispatch.costUsd !== undefined
        ? ` · ${money(dispatch.costUsd)}${dispatch.budgetUsd !== undefined ? ` of ${money(dispatch.budgetUsd)}` : ""}`
        : "";
    return `<li><a href="${escapeHtml(link)}">${escapeHtml(dispatch.project)} · ${escapeHtml(dispatch.id.slice(-8))}</a> <span class="badge ${where.tone}">${escapeHtml(where.word)}</span> <span class="muted">${ageText} ago${cost}</span></li>`;
  });
  return page(
    "gstack dispatches",
    `<h1>Dispatches on this host</h1>${items.length > 0 ? `<ul class="list">${items.join("")}</ul>` : `<p class="muted">No dispatches yet.</p>`}`,
  );
}

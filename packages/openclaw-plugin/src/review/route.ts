import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { runAnswerTool } from "../answer-tool";
import { runLandTool } from "../land-tool";
import { type PluginSettings, REVIEW_PATH } from "../plugin-settings";
import type { ToolAnswer } from "../tool-answer";
import { checkCsrf, csrfToken, verifyCapability } from "./capability";
import { listDispatches, readDispatchView } from "./dispatch-view";
import type { ReviewLinks } from "./links";
import { type Flash, renderDispatchPage, renderListPage } from "./render";

/** Largest form body taken. */
const MAX_FORM_BYTES = 64 * 1024;
/** Results of actions kept for their redirect and for a second tap of the same form. */
const KEPT_RESULTS = 500;

type Action = "approve" | "revise" | "reject" | "reply" | "land" | "pr" | "discard";
const ACTIONS = new Set<Action>(["approve", "revise", "reject", "reply", "land", "pr", "discard"]);

/** The calls the chat tools make, the same for the page: same service call, same refusals. */
export interface ReviewActions {
  answer(settings: PluginSettings, params: unknown): Promise<ToolAnswer>;
  land(settings: PluginSettings, params: unknown): Promise<ToolAnswer>;
}

const TOOL_ACTIONS: ReviewActions = { answer: runAnswerTool, land: runLandTool };

/**
 * The review pages under `/gstack/review`: the list (a `list` capability) and one dispatch's page
 * (`/d`, opened by a capability for that dispatch), its progress (`/d/tail`, JSON) and its forms
 * (POST to the page). A request without a valid capability gets 401 and nothing else; a form
 * without the page's token, or sent from another site, 403.
 */
export function reviewHandler(
  settings: PluginSettings,
  links: ReviewLinks,
  options: { actions?: ReviewActions; now?: () => Date } = {},
) {
  const actions = options.actions ?? TOOL_ACTIONS;
  const now = options.now ?? (() => new Date());
  const results = new Map<string, Promise<Flash>>();

  return async (request: IncomingMessage, response: ServerResponse): Promise<boolean> => {
    const url = new URL(request.url ?? "/", "http://gateway.invalid");
    const rest = url.pathname.slice(REVIEW_PATH.length);
    const token = url.searchParams.get("c");
    const key = await links.key().catch(() => undefined);
    if (!key) return plain(response, 503, "The review key cannot be read; see the gateway log.\n");
    const check = verifyCapability(key, token, now());
    if (!check.ok || !token) return plain(response, 401, "Unauthorized\n");
    const capability = check.capability;

    if (rest === "" || rest === "/") {
      if (capability.scope !== "list" || request.method !== "GET")
        return plain(response, 401, "Unauthorized\n");
      const listed = await listDispatches(settings.layout);
      const rows = await Promise.all(
        listed.map(async (dispatch) => ({
          dispatch,
          link: relative(await links.dispatch(dispatch.id, now())),
        })),
      );
      return html(response, 200, renderListPage(rows, now()));
    }

    // The capability names its dispatch: the link carries no id of its own to disagree with it.
    const match = /^\/d(\/tail)?$/.exec(rest);
    if (!match || capability.scope !== "dispatch") return plain(response, 401, "Unauthorized\n");
    const id = capability.dispatchId;
    const pageUrl = `${REVIEW_PATH}/d?c=${token}`;

    if (match[1]) {
      const view = await readDispatchView(settings.layout, id);
      const progress = view?.state?.progress;
      response.statusCode = 200;
      secureHeaders(response);
      response.setHeader("content-type", "application/json; charset=utf-8");
      response.end(
        JSON.stringify({
          status: view?.state?.status ?? "unknown",
          line: progress
            ? `${progress.turns} turns, ${progress.toolUses} tool uses${progress.lastAction ? `, last: ${progress.lastAction}` : ""}`
            : "Not started yet.",
          text: progress?.lastText ?? "",
        }),
      );
      return true;
    }

    if (request.method === "POST") {
      const fetchSite = header(request, "sec-fetch-site");
      if (fetchSite === "cross-site")
        return plain(response, 403, "Refused: the form came from another site.\n");
      const body = await readBody(request, MAX_FORM_BYTES);
      if (body === undefined) return plain(response, 413, "The form is too large.\n");
      const form = new URLSearchParams(body);
      if (!checkCsrf(key, token, form.get("csrf") ?? undefined))
        return plain(
          response,
          403,
          "Refused: this form is not from this page. Open the link again and retry.\n",
        );
      const action = form.get("do") as Action | null;
      const tap = form.get("key") ?? "";
      if (!action || !ACTIONS.has(action) || !/^[A-Za-z0-9_-]{8,80}$/.test(tap))
        return plain(response, 400, "The form names no action this page offers.\n");
      const slot = `${id}|${tap}`;
      let result = results.get(slot);
      if (!result) {
        result = act(settings, actions, id, action, form).catch((error) => ({
          ok: false,
          text: `Nothing was changed: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}.`,
        }));
        results.set(slot, result);
        while (results.size > KEPT_RESULTS) results.delete(results.keys().next().value as string);
      }
      await result;
      response.statusCode = 303;
      secureHeaders(response);
      response.setHeader("location", `${pageUrl}&r=${encodeURIComponent(tap)}`);
      response.end();
      return true;
    }
    if (request.method !== "GET" && request.method !== "HEAD")
      return plain(response, 405, "Only GET and POST.\n");

    const view = await readDispatchView(settings.layout, id);
    if (!view) return plain(response, 404, "This host has no record of that dispatch.\n");
    const shown = url.searchParams.get("r");
    const flash = shown ? await results.get(`${id}|${shown}`) : undefined;
    const nonce = randomBytes(16).toString("base64url");
    const page = renderDispatchPage(
      view,
      {
        action: pageUrl,
        csrf: csrfToken(key, token),
        key: randomBytes(12).toString("base64url"),
        tail: `${REVIEW_PATH}/d/tail?c=${token}`,
        nonce,
      },
      flash,
    );
    return html(response, 200, page, nonce);
  };
}

/** Runs one form's action through the same calls as the chat tools. */
async function act(
  settings: PluginSettings,
  actions: ReviewActions,
  id: string,
  action: Action,
  form: URLSearchParams,
): Promise<Flash> {
  const text = form.get("text")?.trim();
  const roundText = form.get("round");
  const round = roundText && /^\d+$/.test(roundText) ? Number(roundText) : undefined;
  let answer: ToolAnswer;
  if (action === "land" || action === "pr" || action === "discard") {
    answer = await actions.land(settings, {
      dispatch_id: id,
      action: action === "discard" ? "discard" : "land",
      ...(action === "pr" ? { pr: true } : {}),
      ...(action === "discard" ? { force: true } : {}),
    });
  } else {
    if ((action === "revise" || action === "reject" || action === "reply") && !text)
      return { ok: false, text: `Nothing was sent: ${action} needs your words in the box.` };
    answer = await actions.answer(settings, {
      dispatch_id: id,
      answer: action,
      ...(text && action !== "approve" ? { text } : {}),
      ...(round !== undefined ? { round } : {}),
    });
  }
  let said = answer.content
    .map((part) => part.text)
    .join("\n")
    .replace(`${id}: `, "");
  // The daemon's own refusal may already say that nothing was changed: said once.
  const prefix = "Nothing was changed: ";
  if (said.startsWith(prefix) && /nothing was changed/i.test(said.slice(prefix.length)))
    said = said.slice(prefix.length).replace(/^./, (first) => first.toUpperCase());
  return { ok: answer.details.ok === true, text: said };
}

function relative(link: string): string {
  const at = link.indexOf(REVIEW_PATH);
  return at >= 0 ? link.slice(at) : link;
}

function secureHeaders(response: ServerResponse, nonce?: string): void {
  response.setHeader("cache-control", "no-store");
  response.setHeader("referrer-policy", "no-referrer");
  response.setHeader("x-content-type-options", "nosniff");
  response.setHeader("x-frame-options", "DENY");
  response.setHeader(
    "content-security-policy",
    `default-src 'none'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'${nonce ? `; script-src 'nonce-${nonce}'` : ""}`,
  );
}

function plain(response: ServerResponse, status: number, text: string): true {
  response.statusCode = status;
  secureHeaders(response);
  response.setHeader("content-type", "text/plain; charset=utf-8");
  response.end(text);
  return true;
}

function html(response: ServerResponse, status: number, body: string, nonce?: string): true {
  response.statusCode = status;
  secureHeaders(response, nonce);
  response.setHeader("content-type", "text/html; charset=utf-8");
  response.end(body);
  return true;
}

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

async function readBody(request: IncomingMessage, limit: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > limit) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

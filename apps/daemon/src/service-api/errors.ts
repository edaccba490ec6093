import type { CallbackError, CallbackErrorCode } from "@gstack/contracts";

/** A refusal of the service API: the HTTP status and the `callback-error` body. */
export interface ApiRefusal {
  status: number;
  body: CallbackError;
  headers?: Record<string, string>;
}

/** The code and HTTP status for each intake rule a refused dispatch can break. */
const RULE_CODES: Record<string, { code: CallbackErrorCode; status: number }> = {
  encoding: { code: "invalid_json", status: 400 },
  json: { code: "invalid_json", status: 400 },
  schema: { code: "invalid_dispatch", status: 422 },
  size: { code: "too_large", status: 413 },
  "signature-missing": { code: "bad_signature", status: 401 },
  "signature-malformed": { code: "bad_signature", status: 401 },
  "signature-mismatch": { code: "bad_signature", status: 401 },
  ttl: { code: "expired", status: 410 },
  "target-agent": { code: "unknown_agent", status: 422 },
  "callback-url": { code: "bad_callback_url", status: 422 },
  "project-dir": { code: "project_not_found", status: 422 },
  "trusted-repos": { code: "untrusted_repo", status: 403 },
  duplicate: { code: "duplicate", status: 409 },
  stopping: { code: "daemon_stopping", status: 503 },
  not_started: { code: "daemon_stopping", status: 503 },
};

/** The API's answer to a dispatch intake refused, by the rule it broke. */
export function refusalForRule(rule: string, reason: string, id: string | undefined): ApiRefusal {
  const mapped = RULE_CODES[rule] ?? { code: "invalid_dispatch" as const, status: 422 };
  const body: CallbackError = {
    error: mapped.code,
    message: `dispatch refused (${rule}): ${reason}`,
    rule,
    ...(id ? { dispatch_id: id } : {}),
  };
  if (mapped.code === "daemon_stopping") {
    body.retry_after_seconds = 30;
    return { status: mapped.status, body, headers: { "retry-after": "30" } };
  }
  return { status: mapped.status, body };
}

export function apiError(
  status: number,
  code: CallbackErrorCode,
  message: string,
  extra: Partial<CallbackError> = {},
  headers?: Record<string, string>,
): ApiRefusal {
  return { status, body: { error: code, message, ...extra }, ...(headers ? { headers } : {}) };
}

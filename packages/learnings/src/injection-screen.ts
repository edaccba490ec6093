/** One reason a text was judged to be a likely prompt injection. */
export interface InjectionFinding {
  /** Short machine-readable rule name, e.g. `override-instructions`. */
  rule: string;
  /** The field it was found in, e.g. `insight` or `files[2]`. */
  field: string;
}

interface Rule {
  rule: string;
  pattern: RegExp;
}

const RULES: readonly Rule[] = [
  {
    rule: "override-instructions",
    pattern:
      /\b(?:ignore|disregard|forget|override|bypass|skip)\b[^.\n]{0,40}\b(?:previous|prior|above|earlier|preceding|all|any|your|the|existing|system)\b[^.\n]{0,30}\b(?:instructions?|prompts?|rules|directions|guidelines|messages|constraints)\b/i,
  },
  {
    rule: "new-instructions",
    pattern:
      /\b(?:new|updated|real|actual|secret|hidden)\s+(?:system\s+)?instructions?\s*:|\bfrom now on,?\s+you\b|\byou are now\b|\byou must now\b|\bact as (?:an? )?(?:unrestricted|jailbroken|developer mode|system)\b|\bdeveloper mode\b|\bjailbreak/i,
  },
  {
    rule: "system-prompt",
    pattern:
      /\bsystem\s+prompt\b|\[\/?(?:INST|SYS|SYSTEM)\]|<<\/?SYS>>|<\|(?:im_start|im_end|system|user|assistant|endoftext)\|>|^\s*#{0,6}\s*(?:system|assistant|developer)\s*:/im,
  },
  {
    rule: "role-markup",
    pattern: /<\/?\s*(?:system|assistant|user|developer|human|instructions?)\s*>/i,
  },
  {
    rule: "tool-call-markup",
    pattern:
      /<\/?\s*(?:[a-z]+:)?(?:function_calls|function_results|invoke|parameter|tool_use|tool_result|tool_call|tool_calls)\b|"(?:tool_calls|function_call|tool_use)"\s*:|\b(?:Human|Assistant):\s*$/im,
  },
  {
    rule: "hidden-html",
    pattern:
      /<!--|<\s*(?:script|iframe|object|embed|style|meta|img|svg|link)\b|\bon[a-z]+\s*=\s*["']|javascript:|data:text\/html/i,
  },
  {
    rule: "hidden-characters",
    // Zero-width characters, bidirectional overrides and Unicode tag characters hide text from a reader.
    pattern: /[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]|\udb40[\udc00-\udc7f]/,
  },
  {
    rule: "exfiltration",
    pattern:
      /\b(?:send|post|upload|exfiltrate|leak|email|forward)\b[^.\n]{0,40}\b(?:api[\s_-]?keys?|tokens?|secrets?|passwords?|credentials|ssh keys?|\.env)\b|\bcurl\b[^\n]{0,200}\|\s*(?:ba|z)?sh\b/i,
  },
];

/** The rules, in the order findings are reported. */
export const INJECTION_RULES: readonly { rule: string; pattern: RegExp }[] = RULES;

// Words and characters without which no rule can match: one cheap pass lets harmless text
// (nearly all of it) skip the rules. Every rule needs at least one of these.
const CANDIDATE =
  /ignor|disregard|forget|overrid|bypass|skip|instruction|prompt|you (?:are|must)|from now|act as|developer|jailbreak|\[\/?(?:inst|sys)|<|system|assistant|human|tool_|function_|\bon[a-z]+\s*=|javascript:|data:|[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\udb40]|send|post|upload|exfiltrat|leak|email|forward|curl/i;

/** Checks one text and returns the rules it breaks (empty when it looks harmless). */
export function screenText(text: string): string[] {
  if (!CANDIDATE.test(text)) return [];
  const broken: string[] = [];
  for (const { rule, pattern } of RULES) if (pattern.test(text)) broken.push(rule);
  return broken;
}

const KNOWN_FIELDS = new Set([
  "skill",
  "type",
  "key",
  "insight",
  "confidence",
  "source",
  "files",
  "ts",
  "trusted",
  "origin",
]);

/**
 * Screens every string inside a learning (insight, key, skill, files and any unknown field,
 * however deeply nested) for text that tries to steer an agent that reads it. Memory files
 * go straight into an agent's context, so anything found here is kept out and reported.
 */
export function screenLearning(entry: Record<string, unknown>): InjectionFinding[] {
  const findings: InjectionFinding[] = [];
  const visit = (value: unknown, field: string): void => {
    if (typeof value === "string") {
      for (const rule of screenText(value)) findings.push({ rule, field });
    } else if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index++) visit(value[index], `${field}[${index}]`);
    } else if (typeof value === "object" && value !== null) {
      for (const [name, inner] of Object.entries(value)) {
        // Field names are screened too, except gstack's own at the top level.
        if (field !== "" || !KNOWN_FIELDS.has(name)) {
          for (const rule of screenText(name))
            findings.push({ rule, field: field ? `${field}.${name}` : name });
        }
        visit(inner, field ? `${field}.${name}` : name);
      }
    }
  };
  visit(entry, "");
  return findings;
}

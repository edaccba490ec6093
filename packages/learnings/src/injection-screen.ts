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

// Characters, one pattern and words without which no rule can match: three cheap passes let
// harmless text (nearly all of it) skip the rules. Every rule needs at least one of them. The
// words are matched case-insensitively as the rules are (the same flag, so the same ASCII-only
// folding), which finds every place a rule could match without a lowercased copy of the text.
const CANDIDATE_CHARACTERS =
  /[<\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\udb40]/;
const CANDIDATE_HANDLER = /\bon[a-z]+\s*=/i;
// Grouped by first letter, which the regular expression engine tries far faster than a flat
// list of alternatives.
const CANDIDATE_WORDS =
  /a(?:ct as|ssistant)|bypass|curl|d(?:isregard|eveloper|ata:)|e(?:xfiltrat|mail)|f(?:orget|rom now|unction_|orward)|human|i(?:gnor|nstruction)|j(?:ailbreak|avascript:)|leak|overrid|p(?:rompt|ost)|s(?:kip|ystem|end)|tool_|upload|you (?:are|must)|\[\/?(?:inst|sys)/i;

/**
 * False when no rule can match anywhere in `text` (nor in any part of it): the screen's
 * cheap pre-check.
 */
export function mayBreakARule(text: string): boolean {
  return CANDIDATE_CHARACTERS.test(text) || CANDIDATE_HANDLER.test(text) || CANDIDATE_WORDS.test(text);
}

// Short values (skills, types, sources, file names) repeat across entries; the first few
// thousand harmless ones met are remembered so each is checked once. The set never grows past
// that, so unique values (keys, timestamps) add only a lookup to their check.
const SHORT = 64;
const REMEMBERED = 4096;
const harmlessShort = new Set<string>();

const NONE: readonly string[] = Object.freeze([]);

/** Checks one text and returns the rules it breaks (empty when it looks harmless). */
export function screenText(text: string): string[] {
  return [...rulesBroken(text)];
}

function rulesBroken(text: string): readonly string[] {
  const short = text.length <= SHORT;
  if (short && harmlessShort.has(text)) return NONE;
  if (!mayBreakARule(text)) {
    if (short && harmlessShort.size < REMEMBERED) harmlessShort.add(text);
    return NONE;
  }
  const broken: string[] = [];
  for (const { rule, pattern } of RULES) if (pattern.test(text)) broken.push(rule);
  if (short && broken.length === 0 && harmlessShort.size < REMEMBERED) harmlessShort.add(text);
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
  // Nearly every learning holds nothing any rule could match: one pass that only asks the
  // pre-check says so without building field names or lists of rules.
  if (entryIsHarmless(entry)) return [];
  const findings: InjectionFinding[] = [];
  for (const name of Object.keys(entry)) {
    // Field names are screened too, except gstack's own at the top level.
    if (!KNOWN_FIELDS.has(name)) for (const rule of rulesBroken(name)) findings.push({ rule, field: name });
    visit(entry[name], name, findings);
  }
  return findings;
}

/** True when no rule can match any string in the entry (see {@link mayBreakARule}). */
function entryIsHarmless(entry: Record<string, unknown>): boolean {
  for (const name of Object.keys(entry)) {
    if (!KNOWN_FIELDS.has(name) && !isHarmless(name)) return false;
    if (!valueIsHarmless(entry[name])) return false;
  }
  return true;
}

function valueIsHarmless(value: unknown): boolean {
  if (typeof value === "string") return isHarmless(value);
  if (typeof value !== "object" || value === null) return true;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) if (!valueIsHarmless(value[index])) return false;
    return true;
  }
  for (const name of Object.keys(value)) {
    if (!isHarmless(name) || !valueIsHarmless((value as Record<string, unknown>)[name])) return false;
  }
  return true;
}

/** False when a rule may match the text (the rules then decide); remembers short harmless texts. */
function isHarmless(text: string): boolean {
  const short = text.length <= SHORT;
  if (short && harmlessShort.has(text)) return true;
  if (mayBreakARule(text)) return false;
  if (short && harmlessShort.size < REMEMBERED) harmlessShort.add(text);
  return true;
}

function visit(value: unknown, field: string, findings: InjectionFinding[]): void {
  if (typeof value === "string") {
    for (const rule of rulesBroken(value)) findings.push({ rule, field });
  } else if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const item: unknown = value[index];
      if (typeof item === "string") {
        const rules = rulesBroken(item);
        // The field's name is only spelled out for a finding.
        for (const rule of rules) findings.push({ rule, field: `${field}[${index}]` });
      } else if (typeof item === "object" && item !== null) {
        visit(item, `${field}[${index}]`, findings);
      }
    }
  } else if (typeof value === "object" && value !== null) {
    for (const name of Object.keys(value)) {
      const path = `${field}.${name}`;
      for (const rule of rulesBroken(name)) findings.push({ rule, field: path });
      visit((value as Record<string, unknown>)[name], path, findings);
    }
  }
}

import type { RewriteContext } from "./rewrite-paths";
import { rewritePaths } from "./rewrite-paths";
import { openClawSkillName, slashCommandOf } from "./skill-names";
import { toolMappings } from "./tool-mapping";

/** Marks inline code that held a Claude tool name, e.g. `` `Read` ``, while prose rules run. */
export const TOOL_OPEN = "\uE000";
export const TOOL_CLOSE = "\uE001";
/** Marks inline code that held a skill reference such as `` `/review` ``. */
export const SKILL_OPEN = "\uE002";
export const SKILL_CLOSE = "\uE003";

/** Which OpenClaw notes a rewritten skill needs. */
export interface ProseFlags {
  spawnsSessions: boolean;
  plansOnly: boolean;
}

/** Matches a tool written as inline code, in bold, or (for unambiguous names) as a bare word. */
function tool(name: string, bare = true): string {
  const marked = `${TOOL_OPEN}${name}${TOOL_CLOSE}`;
  return bare ? `(?:${marked}|\\*\\*${name}\\*\\*|\\b${name}\\b)` : `(?:${marked}|\\*\\*${name}\\*\\*)`;
}

function capitalise(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Gives `replacement` the case of the first letter of `original`. */
function withCaseOf(original: string, replacement: string): string {
  const first = original.replace(/^[*_\uE000]+/, "").charAt(0);
  return first !== "" && first === first.toUpperCase() && first !== first.toLowerCase()
    ? capitalise(replacement)
    : replacement;
}

/** True when `offset` in `text` starts a sentence, a line or a list item. */
function startsSentence(text: string, offset: number): boolean {
  const before = text.slice(Math.max(0, offset - 12), offset);
  return offset === 0 || /(^|[.!?:]\s+|\n\s*(?:[-*+]\s+|\d+[.)]\s+|>\s*|#+\s+)?|\*\*)$/.test(before);
}

const SKILL_REFERENCE = `(?:${SKILL_OPEN}([a-z0-9-]+)${SKILL_CLOSE}|/([a-z0-9][a-z0-9-]*)\\b)`;

function skillPath(name: string, context: RewriteContext): string {
  return `\`${context.skillsRoot}/${openClawSkillName(name)}/SKILL.md\``;
}

/**
 * A pattern, its replacement and, where given, words of which the pattern cannot match
 * without one: a rule is skipped on text that holds none of them.
 */
type Rule = [RegExp, (match: string, ...groups: string[]) => string, needs?: readonly string[]];

function askRules(): Rule[] {
  const ask = tool("AskUserQuestion");
  return [
    [
      new RegExp(`\\b(use|Use|USE) (?:the )?${ask}(?: tool)? to ask(?: the user)?\\b`, "g"),
      (match) => withCaseOf(match, "ask the user in your chat reply"),
    ],
    [
      new RegExp(`\\b(?:use|Use|call|Call|invoke|Invoke) (?:the )?${ask}(?: tool)?`, "g"),
      (match) => withCaseOf(match, "ask the user in your chat reply"),
    ],
    [
      new RegExp(`\\b(?:via|through|using|with) (?:the |an? )?${ask}(?: tool| calls?)?`, "g"),
      () => "in your chat reply",
    ],
    [
      new RegExp(
        `\\b(Emit|emit|Send|send|Fire|fire) (ONE|one|a single|a|an) ${ask}(?: tool)?(?: calls?)?`,
        "g",
      ),
      (match, _verb: string, count: string) =>
        withCaseOf(match, `ask ${count === "an" ? "a" : count} question in your chat reply`),
    ],
    [
      new RegExp(`\\b(?:Via|Through|Using|With) (?:the |an? )?${ask}(?: tool| calls?)?`, "g"),
      () => "In your chat reply",
    ],
    [
      new RegExp(`\\b(?:calling|Calling|using|Using|firing|Firing) (?:the )?${ask}(?: tool)?`, "g"),
      (match) => withCaseOf(match, "asking the user in your chat reply"),
    ],
    [
      new RegExp(`\\b(to|for|of|on|about|after|before) ${ask}(?: tool)?(?: calls?)?(?! calls)`, "g"),
      (_match, preposition: string) => `${preposition} questions to the user`,
    ],
    [
      new RegExp(`\\b(?:each|every|Each|Every) ${ask}(?: tool)?(?: calls?| questions?)?`, "g"),
      (match) => withCaseOf(match, "every question you ask the user"),
    ],
    [
      new RegExp(`\\b(?:an|An|one|One|any|Any) ${ask}(?: tool)?(?: calls?| questions?)?`, "g"),
      (match) => withCaseOf(match, "a question to the user"),
    ],
    [
      new RegExp(`\\b(?:the|The) ${ask}(?: tool)?(?: calls?| questions?)?`, "g"),
      (match) => withCaseOf(match, "the question to the user"),
    ],
    [
      new RegExp(`${ask}(?: tool)?(?= (?:is|was|has|fails|returns|caps|satisfies|becomes)\\b)`, "g"),
      (_match, offset: string, whole: string) =>
        startsSentence(whole, Number(offset)) ? "Asking in your chat reply" : "asking in your chat reply",
    ],
    [
      new RegExp(`${ask} (F|f)ormat`, "g"),
      (_match, letter) => (letter === "F" ? "Question Format" : "question format"),
    ],
    [new RegExp(`${ask}(?: tool)? calls\\b`, "g"), () => "questions to the user"],
    [new RegExp(`${ask}(?: tool)? call\\b`, "g"), () => "question to the user"],
    [new RegExp(`${ask}s\\b`, "g"), () => "questions to the user"],
  ];
}

/**
 * Sentences about how Claude Code delivers a question (a `tool_use` block, "call the tool")
 * that have no meaning in a chat reply, made true for OpenClaw.
 */
const QUESTION_DELIVERY_RULES: Rule[] = [
  [
    /\b(?:must be sent|is sent|is|be sent) as (?:a )?tool_use, not prose\b/g,
    () => "must be asked as its own question in your chat reply, not buried in other prose",
  ],
  [/,? as a tool_use\b/g, () => ""],
  [/ \(tool_use\)/g, () => ""],
  [
    /\bis a tool_use, not prose — (?:write the question text and )?call the tool directly\b/g,
    () => "is asked in your chat reply as its own question — ask it directly",
  ],
  [
    /\bis a tool_use, not prose\b/g,
    () => "is asked in your chat reply as its own question, not buried in other prose",
  ],
  [/ — write the question text and call the tool\b/g, () => " — write the question text in your chat reply"],
  [/\b(?:call|Call) the tool directly\b/g, (match) => withCaseOf(match, "ask it directly")],
  [
    /\b(first|FIRST) tool call (MUST|must) be ask the user\b/g,
    (_match, first: string, must: string) => `${first} action ${must} be to ask the user`,
  ],
  [/\btool call = ask the user\b/g, () => "action = ask the user"],
  [/\bmeta-ask the user\b/g, () => "first ask the user"],
];

function planRules(): Rule[] {
  const exit = tool("ExitPlanMode");
  const enter = tool("EnterPlanMode");
  return [
    [
      new RegExp(`\\b(before|after|until|Before|After|Until) ${exit}(?: tool)? is (?:called|invoked)`, "g"),
      (_match, preposition: string) => `${preposition} you present the plan for the user's approval`,
      ["ExitPlanMode"],
    ],
    [
      new RegExp(`\\b(?:calling|Calling|invoking|Invoking|using|Using) (?:the )?${exit}(?: tool)?`, "g"),
      (match) => withCaseOf(match, "presenting the plan for the user's approval"),
      ["ExitPlanMode"],
    ],
    [
      new RegExp(
        `\\b(?:call|Call|use|Use|invoke|Invoke|run|Run) (?:the )?${exit}(?: tool)?(?:,? and wait\\b)?`,
        "g",
      ),
      (match) => withCaseOf(match, "present the plan in your chat reply and wait for the user's approval"),
      ["ExitPlanMode"],
    ],
    [
      new RegExp(`${exit}(?: tool)?`, "g"),
      () => "presenting the plan for the user's approval",
      ["ExitPlanMode"],
    ],
    [
      new RegExp(`\\b(?:call|Call|use|Use|invoke|Invoke) (?:the )?${enter}(?: tool)?`, "g"),
      (match) => withCaseOf(match, "switch to planning-only mode"),
      ["EnterPlanMode"],
    ],
    [new RegExp(`${enter}(?: tool)?`, "g"), () => "planning-only mode", ["EnterPlanMode"]],
    [/\bPLAN MODE\b/g, () => "PLANNING-ONLY MODE", ["PLAN MODE"]],
    [/\bPlan Mode\b/g, () => "Planning-Only Mode", ["Plan Mode"]],
    [/\b(P|p)lan-mode\b/g, (_match, letter) => `${letter === "P" ? "P" : "p"}lanning-only`, ["lan-mode"]],
    [
      /\b(P|p)lan mode\b/g,
      (_match, letter) => `${letter === "P" ? "P" : "p"}lanning-only mode`,
      ["lan mode"],
    ],
  ];
}

function skillToolRules(context: RewriteContext): Rule[] {
  const skillTool = `(?:${tool("Skill", false)}(?: tool)?|\\bSkill tool)`;
  const known = (name: string | undefined): name is string =>
    name !== undefined && context.skillNames.has(name);
  return [
    [
      new RegExp(
        `\\b(?:use|Use|invoke|Invoke|call|Call) (?:the )?${skillTool} to (?:invoke|run|load|launch|call|start) (?:the )?${SKILL_REFERENCE}(?: skill)?`,
        "g",
      ),
      (match, marked, plain) => {
        const name = marked ?? plain;
        if (!known(name)) return match;
        return withCaseOf(match, `read ${skillPath(name, context)} and follow it`);
      },
    ],
    [
      new RegExp(`\\b(?:use|Use|invoke|Invoke|call|Call) (?:the )?${skillTool}`, "g"),
      (match) => withCaseOf(match, "read the skill's SKILL.md and follow it"),
    ],
    [
      new RegExp(`\\b(?:with|via|through|using) (?:the )?${skillTool}`, "g"),
      () => "by reading its SKILL.md and following it",
    ],
    [new RegExp(`\\b(?:the |The )?${skillTool}`, "g"), (match) => withCaseOf(match, "the skill's SKILL.md")],
  ];
}

function todoRules(): Rule[] {
  const todo = tool("TodoWrite");
  return [
    [
      new RegExp(`\\b(?:use|Use) (?:the )?${todo}(?: tool)?`, "g"),
      (match) => withCaseOf(match, "keep a checklist in your chat reply"),
    ],
    [new RegExp(`(?:the )?${todo}(?: tool)?`, "g"), () => "a checklist in your chat reply"],
  ];
}

function mappedName(name: string): string {
  const mapping = toolMappings[name];
  if (!mapping) return name;
  return mapping.command ? `\`${mapping.command}\` through the exec tool` : `the ${mapping.openclaw} tool`;
}

function toolRules(): Rule[] {
  const rules: Rule[] = [];
  rules.push([
    /\b(use|Use|with|With) (Grep|Glob)\b(?! tool)/g,
    (_match, verb: string, name: string) => `${verb} ${mappedName(name)}`,
    ["Grep", "Glob"],
  ]);
  rules.push([/\bBash (calls?|commands?)\b/g, (_match, noun: string) => `exec ${noun}`, ["Bash "]]);
  const listNames = ["Read", "Write", "Edit", "MultiEdit", "Bash", "Grep", "Glob", "WebSearch", "WebFetch"];
  const listItem = `(?:${TOOL_OPEN})?(?:${listNames.join("|")})(?:${TOOL_CLOSE})?`;
  rules.push([
    new RegExp(
      `\\b${listItem}(?:\\s*(?:,|/)\\s*(?:and |or )?${listItem}|\\s+(?:and|or)\\s+${listItem})+\\b`,
      "g",
    ),
    (match) => {
      const names = match.match(new RegExp(listNames.join("|"), "g")) ?? [];
      const mapped = [...new Set(names.map((name) => toolMappings[name]?.openclaw ?? name))];
      const named = mapped.map((name) => `\`${name}\``);
      return named.length === 1 ? named[0]! : `${named.slice(0, -1).join(", ")} and ${named.at(-1)}`;
    },
    listNames,
  ]);
  for (const [name, mapping] of Object.entries(toolMappings)) {
    const reference = tool(name, !mapping.ambiguous);
    const word = `(?:${reference}|\\b${name}\\b)`;
    rules.push([
      new RegExp(`\\b(the |The )${word} tool\\b`, "g"),
      (match) =>
        mapping.command ? withCaseOf(match, mappedName(name)) : withCaseOf(match, mappedName(name)),
      [name],
    ]);
    rules.push([
      new RegExp(`${word} tool\\b`, "g"),
      () => (mapping.command ? mappedName(name) : `${mapping.openclaw} tool`),
      [name],
    ]);
    const verbReference = name === "Bash" ? tool(name, true) : reference;
    rules.push([
      new RegExp(
        `\\b(use|Use|via|Via|with|With|through|Through|call|Call)(\\s+)${verbReference}(?! tool)`,
        "g",
      ),
      (_match, verb, space) => `${verb}${space}${mappedName(name)}`,
      [name],
    ]);
    rules.push([
      new RegExp(mapping.ambiguous ? `${TOOL_OPEN}${name}${TOOL_CLOSE}` : reference, "g"),
      () => (mapping.command ? `\`${mapping.command}\`` : `\`${mapping.openclaw}\``),
      [name],
    ]);
  }
  return rules;
}

const ASK_RULES = askRules();
/** Any word the tool rules look for: a mapped tool's name or a marked tool. */
const TOOL_WORD = new RegExp(
  `${[...Object.keys(toolMappings), "Bash", "Grep", "Glob"].join("|")}|${TOOL_OPEN}`,
);
const PLAN_RULES = planRules();
const TODO_RULES = todoRules();
const TOOL_RULES = toolRules();
const skillRuleCache = new WeakMap<RewriteContext, Rule[]>();
const BARE_ASK = new RegExp(tool("AskUserQuestion"), "g");

/** The final wording of a bare AskUserQuestion: a verb phrase, capitalised at a sentence start. */
function bareAsk(text: string): string {
  return text.replace(BARE_ASK, (_match, offset: number, whole: string) =>
    startsSentence(whole, offset) ? "Ask the user in your chat reply" : "ask the user in your chat reply",
  );
}

function subagentRule(text: string): string {
  return text.replace(
    /\b((?:spawn|Spawn|launch|Launch|dispatch|Dispatch|start|Start|run|Run)(?: (?:a|an|one|two|three|four|several|parallel|multiple|\d+))?(?: (?:fresh|separate|independent|general-purpose|parallel|new))*) (subagents?|sub-agents?)\b/g,
    (match, _lead: string, _noun: string, offset: number, whole: string) => {
      const before = whole.slice(0, offset);
      const sentenceStart = Math.max(before.lastIndexOf("\n"), before.search(/[.!?]\s[^.!?]*$/)) + 1;
      const after = whole.slice(offset).search(/[.!?](\s|$)|\n/);
      const sentence = whole.slice(sentenceStart, after === -1 ? whole.length : offset + after);
      return sentence.includes("sessions_spawn") ? match : `${match} (with the sessions_spawn tool)`;
    },
  );
}

const MARKED_SKILL = new RegExp(`${SKILL_OPEN}([a-z0-9-]+)${SKILL_CLOSE}`, "g");

function skillReferences(text: string, context: RewriteContext): string {
  if (!text.includes("/") && !text.includes(SKILL_OPEN)) return text;
  return text
    .replace(MARKED_SKILL, (_match, name: string) =>
      context.skillNames.has(name) ? `\`/${slashCommandOf(openClawSkillName(name))}\`` : `\`/${name}\``,
    )
    .replace(
      /(^|[\s(["'])\/([a-z0-9][a-z0-9-]*)(?![A-Za-z0-9_./-])/gm,
      (match, lead: string, name: string) =>
        context.skillNames.has(name) ? `${lead}/${slashCommandOf(openClawSkillName(name))}` : match,
    );
}

/**
 * Rewrites one run of prose (text outside code) for OpenClaw. Inline code that named a
 * Claude tool or a skill arrives marked (see {@link TOOL_OPEN}, {@link SKILL_OPEN}) so
 * that phrases such as "use the `Read` tool" are read as one phrase.
 */
export function rewriteProse(text: string, context: RewriteContext, flags: ProseFlags): string {
  let output = text;
  const apply = (rules: Rule[]) => {
    for (const [pattern, replace, needs] of rules) {
      if (needs !== undefined && !needs.some((word) => output.includes(word))) continue;
      output = output.replace(pattern, (...args) => replace(...(args as [string, ...string[]])));
    }
  };
  let skillRules = skillRuleCache.get(context);
  if (!skillRules) {
    skillRules = skillToolRules(context);
    skillRuleCache.set(context, skillRules);
  }
  // Each group of rules runs only when its key word is there: most prose has none.
  if (output.includes("Skill")) apply(skillRules);
  if (output.includes("AskUserQuestion")) {
    apply(ASK_RULES);
    output = bareAsk(output);
  }
  if (output.includes("tool") || output.includes("meta-ask")) apply(QUESTION_DELIVERY_RULES);
  const beforePlan = output;
  if (/plan/i.test(output)) apply(PLAN_RULES);
  if (output !== beforePlan) flags.plansOnly = true;
  if (output.includes("TodoWrite")) apply(TODO_RULES);
  if (TOOL_WORD.test(output)) apply(TOOL_RULES);
  if (output.includes("Claude")) {
    output = output
      .replace(/\bClaude ((?:[A-Za-z-]+ )?)sub-?agent(s?)\b/g, "$1sub-agent$2")
      .replace(/\b(?:Claude|Claude's own)(?= and Codex\b)/g, "you");
  }
  if (output.includes("subagent") || output.includes("sub-agent")) output = subagentRule(output);
  if (output.includes("sessions_spawn")) flags.spawnsSessions = true;
  // A version or date of Claude Code is a fact about Claude Code, never restated for OpenClaw.
  if (output.includes("run_in_background")) {
    output = output.replace(/\s+with run_in_background: false —[^)]*(?=\))/g, "");
  }
  if (output.includes("Claude Code")) {
    output = output
      .replace(/,?\s+(?:since|as of|from|in|starting with|before)\s+Claude Code v?\d[\w.]*/g, "")
      // Telling another agent what Claude Code's own files are stays true as written.
      .replace(/\bClaude Code(?! v?\d)(?! skill definitions)/g, "OpenClaw");
  }
  output = skillReferences(output, context);
  return rewritePaths(output, context);
}

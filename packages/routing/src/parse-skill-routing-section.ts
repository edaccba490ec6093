import type { RoutingWarning } from "./routing-source";
import type { LocatedRoute } from "./routing-table";

/** The routes read from a `## Skill routing` section, or `found: false` without one. */
export interface SkillRoutingSection {
  found: boolean;
  routes: LocatedRoute[];
  warnings: RoutingWarning[];
}

const HEADING = /^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const BULLET = /^\s*(?:[-*+]|[0-9]+[.)])\s+(.*)$/;
const ARROW = /\s*(?:→|⟶|->|=>)\s*/;
const SKILL_NAME = /^[a-z0-9][a-z0-9_.:-]*$/i;
const ACTION_WORDS = new Set([
  "invoke",
  "use",
  "run",
  "call",
  "load",
  "the",
  "skill",
  "skills",
  "with",
  "via",
]);

function isSkillRoutingHeading(text: string): boolean {
  return text.replace(/[*_`]/g, "").replace(/:$/, "").trim().toLowerCase() === "skill routing";
}

function unquote(text: string): string {
  return text.replace(/^["'“”‘’`]+|["'“”‘’`]+$/g, "").trim();
}

/** The skills named in the part of a rule after the arrow. */
function skillsOf(action: string): string[] {
  const skills: string[] = [];
  const cleaned = action.replace(/\([^)]*\)/g, " ").replace(/[*_]/g, "");
  for (const part of cleaned.split(/,|;|\+|\band\b|\bor\b|\bthen\b|\|/i)) {
    const words = part
      .trim()
      .split(/\s+/)
      .map((word) => word.replace(/[.!:]+$/, ""))
      .filter((word) => word.length > 0);
    const marked = words.find((word) => /^[/$`]/.test(word));
    const candidate = marked ?? words.find((word) => !ACTION_WORDS.has(word.toLowerCase()));
    if (candidate === undefined) continue;
    const name = candidate.replace(/^[/$`]+|`+$/g, "");
    if (SKILL_NAME.test(name) && !skills.includes(name)) skills.push(name);
  }
  return skills;
}

/** The task-type phrases of a rule's condition: split on `,` `/` `;` and "or", lower-cased. */
function phrasesOf(condition: string): string[] {
  const phrases: string[] = [];
  const cleaned = condition.replace(/[*_]/g, "").replace(/^when\s+/i, "");
  for (const part of cleaned.split(/,|;|\/|\bor\b/i)) {
    const phrase = unquote(part.trim()).replace(/\s+/g, " ").toLowerCase();
    if (phrase.length > 0 && !phrases.includes(phrase)) phrases.push(phrase);
  }
  return phrases;
}

/** Phrases are literal text, not globs: escape what picomatch would read as syntax. */
function literalPattern(text: string): string {
  return text.replace(/[*?[\]{}()!+@\\|]/g, "\\$&");
}

function routeOf(condition: string, skills: string[], line: number): LocatedRoute {
  const taskTypes = phrasesOf(condition).map(literalPattern);
  for (const skill of skills)
    if (!taskTypes.includes(skill.toLowerCase())) taskTypes.push(skill.toLowerCase());
  return { name: condition, description: condition, match: { task_type: taskTypes }, skills, line };
}

function tableCells(line: string): string[] | undefined {
  const trimmed = line.trim();
  if (!trimmed.startsWith("|")) return undefined;
  return trimmed
    .replace(/^\||\|$/g, "")
    .split("|")
    .map((cell) => cell.trim());
}

/**
 * Reads gstack's `## Skill routing` section of a CLAUDE.md or AGENTS.md into routes. Pure.
 *
 * The section runs from a level-2 heading "Skill routing" (any case, optional trailing
 * colon) to the next heading of level 1 or 2; fenced code blocks are skipped. Accepted rules:
 * - bullets `- <condition> → invoke <skill>` (also `->`, `=>`; verbs invoke/use/run/call/load;
 *   skills written `name`, `/name`, `$name` or `` `name` ``, several joined by `,` `or` `and` `+`);
 * - table rows `| <condition> | /skill |` whose last cell names a skill with `/`, `$` or backticks.
 *
 * A condition becomes `match.task_type`: its phrases (split on `,` `/` `;` "or", lower-cased,
 * quotes removed) plus the skill names themselves, so task type "bugs" or "investigate" both
 * reach `investigate`. Prose lines are ignored; a bullet with an arrow but no skill is a warning.
 */
export function parseSkillRoutingSection(markdown: string, path?: string): SkillRoutingSection {
  const lines = markdown.split(/\r?\n/);
  const routes: LocatedRoute[] = [];
  const warnings: RoutingWarning[] = [];
  let found = false;
  let inSection = false;
  let fence: string | undefined;
  lines.forEach((line, index) => {
    const lineNumber = index + 1;
    const fenceMatch = FENCE.exec(line);
    if (fence !== undefined) {
      if (fenceMatch && fenceMatch[1]![0] === fence[0] && fenceMatch[1]!.length >= fence.length)
        fence = undefined;
      return;
    }
    if (fenceMatch) {
      fence = fenceMatch[1]!;
      return;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      const level = heading[1]!.length;
      if (level === 2 && isSkillRoutingHeading(heading[2]!)) {
        inSection = true;
        found = true;
      } else if (level <= 2) {
        inSection = false;
      }
      return;
    }
    if (!inSection) return;
    const bullet = BULLET.exec(line);
    if (bullet) {
      const text = bullet[1]!;
      const arrow = ARROW.exec(text);
      if (!arrow) return;
      const condition = text.slice(0, arrow.index).trim();
      const skills = skillsOf(text.slice(arrow.index + arrow[0].length));
      if (condition.length === 0 || skills.length === 0) {
        warnings.push({
          ...(path === undefined ? {} : { path }),
          line: lineNumber,
          message: `skipped a routing rule without ${condition.length === 0 ? "a condition" : "a skill"}: ${text.trim()}`,
        });
        return;
      }
      routes.push(routeOf(condition, skills, lineNumber));
      return;
    }
    const cells = tableCells(line);
    if (cells && cells.length >= 2) {
      const last = cells[cells.length - 1]!;
      if (!/(^|\s)[/$`]/.test(last)) return;
      const condition = cells.slice(0, -1).join(", ");
      const skills = skillsOf(last);
      if (skills.length > 0 && condition.replace(/[-:|\s]/g, "").length > 0) {
        routes.push(routeOf(condition, skills, lineNumber));
      }
    }
  });
  return { found, routes, warnings };
}

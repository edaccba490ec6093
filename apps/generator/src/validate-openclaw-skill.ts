import JSON5 from "json5";
import { parseDocument } from "yaml";
import { isHyphenCase, slashCommandOf } from "./skill-names";

/** One broken rule in a SKILL.md. */
export interface SkillIssue {
  /** `load.*`: OpenClaw would skip or misread the skill. `strict.*`: the skill-creator validator refuses it. `docs.*`: against OpenClaw's guidance. */
  rule: string;
  /** Frontmatter field at fault, e.g. `metadata.openclaw.requires.bins`; empty for the file. */
  field: string;
  message: string;
  severity: "error" | "warning";
}

/** Largest SKILL.md OpenClaw loads. */
export const MAX_SKILL_BYTES = 256_000;
/** Top-level keys the strict validator accepts. */
export const STRICT_TOP_LEVEL_KEYS: ReadonlySet<string> = new Set([
  "name",
  "description",
  "license",
  "allowed-tools",
  "metadata",
]);
const INSTALL_KINDS = new Set(["brew", "node", "go", "uv", "download"]);
const STRING_LIST_FIELDS = ["bins", "anyBins", "env", "config"] as const;

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

function checkOpenClawMetadata(openclaw: unknown, issues: SkillIssue[]): void {
  const issue = (field: string, message: string) =>
    issues.push({ rule: "load.metadata", field: `metadata.openclaw${field}`, message, severity: "error" });
  if (typeof openclaw !== "object" || openclaw === null || Array.isArray(openclaw)) {
    issue("", "must be an object");
    return;
  }
  const record = openclaw as Record<string, unknown>;
  for (const key of ["emoji", "homepage", "skillKey", "primaryEnv"]) {
    if (record[key] !== undefined && typeof record[key] !== "string") issue(`.${key}`, "must be a string");
  }
  if (record["always"] !== undefined && typeof record["always"] !== "boolean")
    issue(".always", "must be true or false");
  if (record["os"] !== undefined && !isStringArray(record["os"])) issue(".os", "must be a list of strings");
  const requires = record["requires"];
  if (requires !== undefined) {
    if (typeof requires !== "object" || requires === null || Array.isArray(requires)) {
      issue(".requires", "must be an object");
    } else {
      for (const field of STRING_LIST_FIELDS) {
        const value = (requires as Record<string, unknown>)[field];
        if (value !== undefined && !isStringArray(value))
          issue(`.requires.${field}`, "must be a list of strings");
      }
    }
  }
  const install = record["install"];
  if (install !== undefined) {
    if (!Array.isArray(install)) {
      issue(".install", "must be a list");
    } else {
      install.forEach((entry, index) => {
        const kind = (entry as Record<string, unknown> | null)?.["kind"];
        if (typeof kind !== "string" || !INSTALL_KINDS.has(kind)) {
          issues.push({
            rule: "load.install-kind",
            field: `metadata.openclaw.install[${index}].kind`,
            message: `OpenClaw drops install entries whose kind is not one of ${[...INSTALL_KINDS].join(", ")}`,
            severity: "warning",
          });
        }
      });
    }
  }
}

/**
 * Checks a SKILL.md against OpenClaw's loading rules (frontmatter opening the file, YAML
 * core schema, non-empty name and description, size, `metadata.openclaw` read as JSON5)
 * and the rules of OpenClaw's strict skill validator (top-level keys, hyphen-case name
 * equal to the folder, description limits). Returns every issue; none means the skill
 * loads and passes the validator.
 */
export function validateOpenClawSkill(input: { folderName: string; content: string }): SkillIssue[] {
  const issues: SkillIssue[] = [];
  const error = (rule: string, field: string, message: string) =>
    issues.push({ rule, field, message, severity: "error" });
  const bytes = Buffer.byteLength(input.content, "utf8");
  if (bytes > MAX_SKILL_BYTES)
    error("load.size", "", `${bytes} bytes; OpenClaw skips files over ${MAX_SKILL_BYTES}`);
  if (!/^---\r?\n/.test(input.content)) {
    error("load.frontmatter", "", "the file must open with a --- frontmatter line");
    return issues;
  }
  const rest = input.content.slice(input.content.indexOf("\n") + 1);
  const closing = /^---[ \t]*$/m.exec(rest);
  if (!closing) {
    error("load.frontmatter", "", "the frontmatter is never closed by a --- line");
    return issues;
  }
  const document = parseDocument(rest.slice(0, closing.index), { schema: "core" });
  if (document.errors.length > 0) {
    error("load.yaml", "", `frontmatter is not valid YAML: ${document.errors[0]?.message.split("\n")[0]}`);
    return issues;
  }
  const frontmatter: unknown = document.toJS();
  if (typeof frontmatter !== "object" || frontmatter === null || Array.isArray(frontmatter)) {
    error("load.yaml", "", "frontmatter must be a mapping");
    return issues;
  }
  const fields = frontmatter as Record<string, unknown>;
  const name = fields["name"];
  const description = fields["description"];
  if (typeof name !== "string" || name.trim() === "")
    error("load.empty", "name", "is empty; OpenClaw skips the skill");
  if (typeof description !== "string" || description.trim() === "") {
    error("load.empty", "description", "is empty; OpenClaw skips the skill");
  }

  const metadata = fields["metadata"];
  if (metadata !== undefined) {
    let parsed: unknown;
    try {
      parsed = typeof metadata === "string" ? JSON5.parse(metadata) : JSON5.parse(JSON.stringify(metadata));
    } catch (cause) {
      error("load.metadata", "metadata", `is not JSON5: ${(cause as Error).message}`);
    }
    if (parsed !== undefined) {
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
        error("strict.metadata", "metadata", "must be a mapping");
      } else if ((parsed as Record<string, unknown>)["openclaw"] !== undefined) {
        checkOpenClawMetadata((parsed as Record<string, unknown>)["openclaw"], issues);
      }
    }
  }

  for (const key of Object.keys(fields)) {
    if (!STRICT_TOP_LEVEL_KEYS.has(key)) {
      error(
        "strict.keys",
        key,
        `is not allowed at the top level (only ${[...STRICT_TOP_LEVEL_KEYS].join(", ")})`,
      );
    }
  }
  if (typeof name === "string" && name !== "") {
    if (!isHyphenCase(name))
      error("strict.name", "name", "must be hyphen-case: a-z, 0-9 and single inner hyphens");
    if (name.length > 64) error("strict.name", "name", `is ${name.length} characters; at most 64`);
    if (name !== input.folderName) {
      error("strict.name", "name", `must equal the folder name ${JSON.stringify(input.folderName)}`);
    }
    if (slashCommandOf(name) !== name.replaceAll("-", "_")) {
      issues.push({
        rule: "docs.command",
        field: "name",
        message: `the slash command is cut to 32 characters: /${slashCommandOf(name)}`,
        severity: "warning",
      });
    }
  }
  if (typeof description === "string") {
    if (description.length > 1024)
      error("strict.description", "description", `is ${description.length} characters; at most 1024`);
    if (/[<>]/.test(description)) error("strict.description", "description", "must not contain < or >");
    if (/\n/.test(description.trim())) {
      issues.push({
        rule: "docs.description",
        field: "description",
        message: "should be one line",
        severity: "warning",
      });
    }
    if (description.length >= 160) {
      issues.push({
        rule: "docs.description",
        field: "description",
        message: `is ${description.length} characters; OpenClaw's docs ask for under 160`,
        severity: "warning",
      });
    }
  } else if (description !== undefined) {
    error("strict.description", "description", "must be a string");
  }
  return issues;
}

import { compareText } from "./compare-text";
import { slashCommandOf } from "./skill-names";

/** A member skill as the meta-package lists it. */
export interface PackMember {
  name: string;
  description: string;
}

/**
 * The section the meta-package's SKILL.md ends with: what the pack holds and how to pull
 * every member from ClawHub, since a ClawHub skill cannot declare dependencies.
 */
export function packSection(members: readonly PackMember[]): string {
  const sorted = [...members].sort((left, right) => compareText(left.name, right.name));
  const lines = sorted.map(
    (member) => `- \`${member.name}\` (\`/${slashCommandOf(member.name)}\`): ${member.description}`,
  );
  const install = sorted.map((member) => `clawhub install ${member.name}`);
  return `## The gstack pack

This skill is the pack's entry point. The pack holds these skills:

${lines.join("\n")}

### Installing the whole pack

When the user asks for gstack and one of the skills above is missing from \`skills/\` in the
workspace, install the missing ones with the exec tool, then tell the user which were added:

\`\`\`bash
${install.join("\n")}
\`\`\`
`;
}

/** The meta-package's own body, used when the input has no root skill. */
export function packIntroduction(): string {
  return `# gstack

gstack is a pack of coding workflows: planning, review, testing in a real browser,
release and retrospectives. Each workflow is its own skill; pick the one that fits the
request, read its SKILL.md and follow it.
`;
}

import { GeneratorError } from "./generator-error";

/** ClawHub's skill slug rule: lower-case letters, digits and single inner hyphens. */
export const CLAWHUB_SLUG = /^[a-z0-9](?:(?!--)[a-z0-9-])*[a-z0-9]$/;

/** True when `slug` is a valid ClawHub skill slug (3–96 characters). */
export function isClawHubSlug(slug: string): boolean {
  return slug.length >= 3 && slug.length <= 96 && CLAWHUB_SLUG.test(slug);
}

/** One `clawhub skill publish` call. */
export interface PublishStep {
  slug: string;
  /** Skill folder relative to the output folder, e.g. `skills/gstack-ship`. */
  dir: string;
  version: string;
  /** The command as an argument list, ready for execa or a shell quoter. */
  command: string[];
}

/** Everything a release publishes, in order. */
export interface PublishPlan {
  /** gstack's four-part version the bundle was made from. */
  gstackVersion: string;
  /** The semver every skill is published under. */
  version: string;
  /** The meta-package slug; published last so that every skill it names exists. */
  metaPackage: string;
  steps: PublishStep[];
}

/**
 * Orders the publish commands of a bundle: every member skill by name, then the
 * meta-package. Refuses a slug ClawHub would refuse, before anything is published.
 */
export function publishPlan(options: {
  skills: readonly string[];
  metaPackage: string;
  gstackVersion: string;
  version: string;
  skillsDir?: string;
}): PublishPlan {
  const skillsDir = options.skillsDir ?? "skills";
  const members = [...new Set(options.skills)].filter((slug) => slug !== options.metaPackage).sort();
  const steps = [...members, options.metaPackage].map((slug) => {
    if (!isClawHubSlug(slug)) {
      throw new GeneratorError({
        code: "slug",
        message: `${JSON.stringify(slug)} is not a valid ClawHub slug (3–96 characters, a-z, 0-9 and single inner hyphens)`,
      });
    }
    const dir = `${skillsDir}/${slug}`;
    return {
      slug,
      dir,
      version: options.version,
      command: ["clawhub", "skill", "publish", dir, "--version", options.version],
    };
  });
  return {
    gstackVersion: options.gstackVersion,
    version: options.version,
    metaPackage: options.metaPackage,
    steps,
  };
}

function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:=@+-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}

/** The plan as shell lines, one command a line. */
export function formatPublishPlan(plan: PublishPlan): string {
  return `${plan.steps.map((step) => step.command.map(shellQuote).join(" ")).join("\n")}\n`;
}

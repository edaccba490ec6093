import type { z } from "zod";
import { lazySchema } from "../lazy";

const oneOrMany = lazySchema((z) => z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]));

/**
 * Conditions of a route. Every key present must hold. Unknown keys are an error: a route
 * keyed on a misspelt condition would otherwise match everything.
 */
export const routeMatchSchema = lazySchema((z) =>
  z
    .strictObject({
      project: oneOrMany.optional().describe("Project slug(s); glob patterns allowed."),
      task_type: oneOrMany.optional().describe("Task type(s), e.g. 'security'."),
      files: z
        .array(z.string().min(1))
        .min(1)
        .optional()
        .describe("Globs; any touched path matching any glob holds."),
      branch: oneOrMany.optional().describe("Branch name(s); glob patterns allowed."),
      agent: oneOrMany.optional().describe("Runtime or agent name(s) asking, e.g. 'gstack', 'wintermute'."),
    })
    .describe("Conditions that must all hold for a route to apply."),
);

export const routeSchema = lazySchema((z) =>
  z
    .looseObject({
      name: z.string().min(1).optional(),
      description: z.string().optional(),
      match: routeMatchSchema,
      load: z.array(z.string().min(1)).optional().describe("Context to load (documents, memories)."),
      skills: z.array(z.string().min(1)).optional().describe("Skills to use."),
    })
    .refine((route) => (route.load?.length ?? 0) + (route.skills?.length ?? 0) > 0, {
      message: "a route must list at least one entry in 'load' or 'skills'",
      path: ["load"],
    })
    // The refinement above, said in JSON Schema words so the published schema agrees.
    .meta({
      anyOf: [
        { required: ["load"], properties: { load: { minItems: 1 } } },
        { required: ["skills"], properties: { skills: { minItems: 1 } } },
      ],
    }),
);

/** `routing.yaml` under the gstack state root, read by both runtimes. */
export const routingConfigSchema = lazySchema((z) =>
  z
    .looseObject({
      version: z.literal(1).optional(),
      routes: z.array(routeSchema),
    })
    .describe("The shared routing table."),
);

export type RouteMatch = z.output<typeof routeMatchSchema>;
export type Route = z.output<typeof routeSchema>;
export type RoutingConfig = z.output<typeof routingConfigSchema>;

/**
 * The entry bundlers resolve (the `module` condition of package.json): the same package, with
 * zod and yaml imported up front so that a bundler includes them. A bundle, such as the OpenClaw
 * plugin's, has no node_modules to load them from on first use, as `index.ts` does under Node.
 * The call below is this module's side effect, which package.json's `sideEffects` declares so
 * that a bundler keeps it.
 */
import * as yaml from "yaml";
import * as zod from "zod";
import { provideDependencies } from "./lazy";

provideDependencies({ zod, yaml });

export * from "./index";

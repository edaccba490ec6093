/**
 * Loaded before every test file: property tests run from one fixed seed, so CI sees the
 * same cases every run (`vitest.seed-banner.ts` prints it once). Set FC_SEED to explore
 * other cases locally; a counterexample found that way is pinned as a plain example test
 * next to its property.
 */
import fc from "fast-check";
import { fastCheckSeed } from "./vitest.seed";

fc.configureGlobal({ seed: fastCheckSeed() });

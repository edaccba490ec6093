import { fastCheckSeed } from "./vitest.seed";

/** Prints the property-test seed once per test run, so a failure can be repeated exactly. */
export default function printSeed(): void {
  console.log(`fast-check seed ${fastCheckSeed()} (FC_SEED=<n> to run other cases)`);
}

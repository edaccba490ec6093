import fc from "fast-check";

/**
 * Every property runs from one seed, so CI is deterministic: `FAST_CHECK_SEED` when set
 * (to replay or explore), else a fixed one. The seed is printed with every failure.
 */
const seed = Number.parseInt(process.env["FAST_CHECK_SEED"] ?? "20261123", 10);
fc.configureGlobal({ seed, verbose: true });

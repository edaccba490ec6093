/** The seed every property test runs from: FC_SEED, or a fixed default. */
export function fastCheckSeed(): number {
  const seed = Number.parseInt(process.env.FC_SEED ?? "20261123", 10);
  if (!Number.isSafeInteger(seed))
    throw new Error(`FC_SEED must be a whole number, got ${process.env.FC_SEED}`);
  return seed;
}

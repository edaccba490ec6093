/** Placeholder replaced below. */
export async function runDemo(_options: { keep: boolean; out: (text: string) => void }): Promise<boolean> {
  throw new Error("demo not ready");
}

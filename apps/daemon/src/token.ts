import { execFile } from "node:child_process";
import { type GstackLayout, readSecretFile } from "@gstack/contracts";

/** The keychain service name under which the Clawvisor agent token is kept on macOS. */
export const KEYCHAIN_SERVICE = "gstack-clawvisor";

/** The keychain service name of the service API's bearer token on macOS. */
export const API_KEYCHAIN_SERVICE = "gstack-api";

/** A generic password from the macOS keychain; undefined elsewhere or when there is none. */
export function keychainToken(service = KEYCHAIN_SERVICE): Promise<string | undefined> {
  if (process.platform !== "darwin") return Promise.resolve(undefined);
  return new Promise((resolve) => {
    execFile("security", ["find-generic-password", "-s", service, "-w"], { timeout: 5000 }, (error, stdout) =>
      resolve(error ? undefined : stdout.trim() || undefined),
    );
  });
}

/**
 * The bearer token for callbacks: the macOS keychain first, then `.clawvisor-token` (which
 * must be 0600; a looser file is refused with an error). Undefined when neither exists.
 */
export async function readCallbackToken(layout: GstackLayout): Promise<string | undefined> {
  const fromKeychain = await keychainToken();
  if (fromKeychain) return fromKeychain;
  try {
    return await readSecretFile(layout.clawvisorToken);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** The dispatch signing secret, or undefined when none is configured. */
export async function readDispatchSecret(layout: GstackLayout): Promise<string | undefined> {
  try {
    return await readSecretFile(layout.dispatchSecret);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

import { join } from "node:path";
import type { GstackLayout } from "@gstack/contracts";

/** Where a dispatch's landing record is kept. */
export function landingFile(layout: GstackLayout, id: string): string {
  return join(layout.dispatch.sessionDir(id), "landing.json");
}

// zod as a file of its own in the bundle, loaded by bundle-dependencies.ts on first use.
import * as zod from "zod";

export default zod;

// yaml as a file of its own in the bundle, loaded by bundle-dependencies.ts on first use.
import * as yaml from "yaml";

export default yaml;

import type * as Crypto from "node:crypto";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type * as Yaml from "yaml";
import type * as Zod from "zod";

const requireHere = createRequire(import.meta.url);

const provided: Record<string, unknown> = {};

const loaders: Record<string, () => unknown> = {};

/**
 * Hands over dependencies already imported, for the build bundlers pick (`index-bundled.ts`):
 * a bundle has no node_modules to load them from later.
 */
export function provideDependencies(dependencies: { zod: typeof Zod; yaml: typeof Yaml }): void {
  Object.assign(provided, dependencies);
}

/**
 * Hands over functions that load zod and yaml, called on first use like the package's own
 * loading. For a bundle that keeps them lazy: a bundler that turns `require("zod")` into a
 * deferred initialiser lets a bundled command that never validates skip evaluating zod. A
 * dependency already provided or loaded is kept.
 */
export function provideDependencyLoaders(dependencies: {
  zod?: () => typeof Zod;
  yaml?: () => typeof Yaml;
}): void {
  for (const [name, load] of Object.entries(dependencies)) if (load) loaders[name] = load;
}

/**
 * A dependency loaded the first time it is asked for, not when this package is imported: it
 * is resolved as an `import` would resolve it and loaded with Node's `require()`, which (22.12
 * and later) answers for an ES module from the same module cache `import` uses, so a program
 * that also imports it statically shares one copy with this package.
 */
function loadOnFirstUse<T>(specifier: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= (provided[specifier] ?? loaders[specifier]?.()) as T | undefined;
    if (loaded === undefined) {
      const resolved = import.meta.resolve(specifier);
      loaded = requireHere(resolved.startsWith("file:") ? fileURLToPath(resolved) : specifier) as T;
    }
    return loaded;
  };
}

/**
 * zod, loaded on first use: evaluating it takes longer than starting Node, and a command that
 * only asks for paths or reads documents the fast checks accept never needs it.
 */
export const loadZod: () => typeof Zod = loadOnFirstUse("zod");

/** yaml, loaded on first use: only YAML documents need it. */
export const loadYaml: () => typeof Yaml = loadOnFirstUse("yaml");

type ZodNamespace = typeof Zod.z;

const targetKey = Symbol("@gstack/contracts.lazySchema.target");

/**
 * A value built by `build` the first time any property of it is read, standing in for it
 * meanwhile. The schemas of this package are built this way, so importing the package does
 * not load zod or construct a schema a program never uses; the stand-in behaves as the schema
 * itself (methods, `instanceof`, metadata such as descriptions).
 */
export function lazySchema<T extends object>(build: (z: ZodNamespace) => T): T {
  let built: T | undefined;
  const placeholder = {} as T;
  const target = (): T => {
    if (built === undefined) {
      const z = loadZod().z;
      built = build(z);
      // zod keeps descriptions and other metadata in a registry keyed by the schema object;
      // the stand-in is a different object, so it gets the same entry.
      const registry = z.globalRegistry;
      const metadata = registry.get(built as unknown as Zod.ZodType);
      if (metadata !== undefined) {
        const { id: _id, ...rest } = metadata;
        registry.add(proxy as unknown as Zod.ZodType, rest);
      }
    }
    return built;
  };
  // util.inspect (console.log) shows a proxy's placeholder without asking the proxy; this makes
  // it show the schema instead.
  Object.defineProperty(placeholder, Symbol.for("nodejs.util.inspect.custom"), {
    configurable: true,
    value: (_depth: number, options: object, inspect: (value: unknown, options: object) => string) =>
      inspect(target(), options),
  });
  const proxy: T = new Proxy(placeholder, {
    get: (_, key) => (key === targetKey ? target() : Reflect.get(target(), key)),
    set: (_, key, value) => Reflect.set(target(), key, value),
    has: (_, key) => Reflect.has(target(), key),
    deleteProperty: (_, key) => Reflect.deleteProperty(target(), key),
    defineProperty: (_, key, descriptor) => Reflect.defineProperty(target(), key, descriptor),
    ownKeys: () => Reflect.ownKeys(target()),
    getOwnPropertyDescriptor: (_, key) => {
      const descriptor = Reflect.getOwnPropertyDescriptor(target(), key);
      // A proxy may report a property as non-configurable only if its placeholder has it too.
      if (descriptor && !descriptor.configurable && !Object.hasOwn(placeholder, key))
        Object.defineProperty(placeholder, key, descriptor);
      return descriptor;
    },
    getPrototypeOf: () => Reflect.getPrototypeOf(target()),
  });
  return proxy;
}

/** The schema itself behind a stand-in made by {@link lazySchema} (or the value unchanged). */
export function builtSchema<T extends object>(value: T): T {
  return ((value as Record<symbol, unknown>)[targetKey] as T | undefined) ?? value;
}

/** A value computed on first call and kept, for the schema parts several schemas share. */
export function lazyValue<T>(build: (z: ZodNamespace) => T): () => T {
  let built: { value: T } | undefined;
  return () => {
    built ??= { value: build(loadZod().z) };
    return built.value;
  };
}

/**
 * node:crypto, loaded on first use: loading it costs a command a sixth of Node's start-up, and
 * only signing and naming temporary files need it.
 */
export function nodeCrypto(): typeof Crypto {
  return process.getBuiltinModule("node:crypto");
}

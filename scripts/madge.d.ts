// The part of madge's API scripts/check-layers.ts uses (madge ships no type declarations).
declare module "madge" {
  interface MadgeConfig {
    fileExtensions?: string[];
    baseDir?: string;
  }
  interface MadgeResult {
    /** Each file (relative to baseDir) and the files it imports. */
    obj(): Record<string, string[]>;
  }
  export default function madge(path: string | string[], config?: MadgeConfig): Promise<MadgeResult>;
}

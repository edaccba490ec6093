const byKeyword: [RegExp, string][] = [
  [/ship|release|deploy|land/, "🚀"],
  [/review|audit/, "🔍"],
  [/qa|test/, "🧪"],
  [/investigate|debug/, "🕵️"],
  [/browse|browser/, "🌐"],
  [/design|ui/, "🎨"],
  [/cso|security|careful|guard|freeze/, "🛡️"],
  [/retro|report|stats/, "📈"],
  [/plan|office-hours|ceo|eng/, "🧭"],
  [/doc/, "📝"],
  [/context|checkpoint|save|restore|learn/, "🧠"],
  [/codex|second-opinion/, "🤝"],
];

/** An emoji for the OpenClaw skill list, chosen from words in the skill's name. */
export function emojiFor(gstackName: string): string {
  for (const [pattern, emoji] of byKeyword) {
    if (pattern.test(gstackName)) return emoji;
  }
  return "🛠️";
}

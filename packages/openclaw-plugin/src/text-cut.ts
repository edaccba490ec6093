/**
 * The first `room` characters (code points) of `text`, ended at its last line break, else its
 * last space, when that keeps more than half of them: where a message shortened for a person
 * stops.
 */
export function cutAtBreak(text: string, room: number): string {
  let cut = [...text].slice(0, Math.max(0, room)).join("");
  const atLine = cut.lastIndexOf("\n");
  const atWord = cut.lastIndexOf(" ");
  if (atLine > cut.length / 2) cut = cut.slice(0, atLine);
  else if (atWord > cut.length / 2) cut = cut.slice(0, atWord);
  return cut.trimEnd();
}

import type { LearningEntry } from "./learning-entry";
import { compareEntries } from "./memory-file";
import { decodeSection, renderSection } from "./memory-section";

// Every section of the sections part starts with a blank line, then its heading; no other
// line in that part starts with `#` (insights are quoted, the rest is metadata and comments).
const SECTION_START = Buffer.from("\n## Learning: ");

/** A change to the sections part of a memory file, in byte offsets of the old file. */
interface Edit {
  start: number;
  end: number;
  bytes: Buffer;
  order: { type: string; key: string };
}

/**
 * The sections of a memory file this package wrote, found in its bytes by binary search
 * (they are sorted by type, then key), and changed in place of a full render.
 */
export class SectionSplicer {
  private readonly edits: Edit[] = [];
  private added = 0;

  constructor(
    private readonly bytes: Buffer,
    private readonly start: number,
    private readonly end: number,
  ) {}

  private sectionAtOrAfter(position: number): number {
    const found = this.bytes.indexOf(SECTION_START, position);
    return found === -1 || found >= this.end ? this.end : found;
  }

  private entryAt(position: number): { entry: LearningEntry; end: number } {
    const end = this.sectionAtOrAfter(position + 1);
    const lines = this.bytes.toString("utf8", position + 1, end).split("\n");
    const decoded = decodeSection(lines.slice(1));
    if (decoded.edited) throw new Error("a section of the memory file was edited");
    return { entry: decoded.entry, end };
  }

  /** The section of `key|type`, if the file has one, or where one would go. */
  find(order: { type: string; key: string }): { start: number; end: number; entry?: LearningEntry } {
    let low = this.start;
    let high = this.end;
    while (low < high) {
      const middle = low + Math.floor((high - low) / 2);
      const section = this.sectionAtOrAfter(middle);
      if (section === this.end || compareEntries(this.entryAt(section).entry, order) >= 0) high = middle;
      else low = section + 1;
    }
    const section = this.sectionAtOrAfter(low);
    if (section === this.end) return { start: section, end: section };
    const found = this.entryAt(section);
    if (compareEntries(found.entry, order) !== 0) return { start: section, end: section };
    return { start: section, end: found.end, entry: found.entry };
  }

  /** Puts `entry` in place of the section found (or where it goes); no change when the bytes are equal. */
  put(place: { start: number; end: number }, entry: LearningEntry): void {
    const bytes = Buffer.from(`\n${renderSection(entry)}`, "utf8");
    if (place.end > place.start && this.bytes.subarray(place.start, place.end).equals(bytes)) return;
    if (place.end === place.start) this.added++;
    this.edits.push({ ...place, bytes, order: entry });
  }

  /** Takes the section found out of the file. */
  remove(place: { start: number; end: number; entry?: LearningEntry }): void {
    if (place.entry === undefined) return;
    this.added--;
    this.edits.push({ start: place.start, end: place.end, bytes: Buffer.alloc(0), order: place.entry });
  }

  /** True when a call changed the file. */
  get changed(): boolean {
    return this.edits.length > 0;
  }

  /** Sections added (negative: removed) in all. */
  get sectionsAdded(): number {
    return this.added;
  }

  /** The new file and the new end of its sections part. */
  result(): { bytes: Buffer; sectionsEnd: number } {
    // Sections that go in at the same place follow each other in their own order, before
    // the section that was there (which sorts after them).
    const edits = [...this.edits].sort(
      (left, right) => left.start - right.start || compareEntries(left.order, right.order),
    );
    const parts: Buffer[] = [];
    let position = 0;
    let sectionsEnd = this.end;
    for (const edit of edits) {
      parts.push(this.bytes.subarray(position, edit.start), edit.bytes);
      position = edit.end;
      sectionsEnd += edit.bytes.length - (edit.end - edit.start);
    }
    parts.push(this.bytes.subarray(position));
    return { bytes: Buffer.concat(parts), sectionsEnd };
  }
}

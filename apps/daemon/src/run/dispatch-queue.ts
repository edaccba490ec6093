/** How a {@link DispatchQueue} is sized and where it keeps its order. */
export interface DispatchQueueOptions {
  /** How many dispatches may hold a slot at once; asked each time, so a settings reload counts. */
  maxConcurrent: () => number;
  /** Writes the waiting order durably (the daemon writes `dispatch/queue.json`). */
  save: (ids: readonly string[]) => Promise<void>;
  /** Told when a save fails; the order stays in memory and the next save tries again. */
  onSaveError?: (error: Error) => void;
}

/**
 * The order in which dispatches wait, and the slots they run in. It knows nothing of
 * processes or files: the daemon asks it for the next dispatch when a slot is free, gives
 * the slot back when the dispatch is finished or queued again, and asks it to save the order.
 */
export class DispatchQueue {
  private waiting: string[] = [];
  private readonly slots = new Set<string>();
  private saving: Promise<void> = Promise.resolve();
  /** The order as last saved, to skip saves that change nothing. */
  private saved?: string;

  constructor(private readonly options: DispatchQueueOptions) {}

  /** The waiting ids, first to start first. */
  get ids(): readonly string[] {
    return [...this.waiting];
  }

  /** How many dispatches wait. */
  get length(): number {
    return this.waiting.length;
  }

  /** How many slots are taken. */
  get active(): number {
    return this.slots.size;
  }

  /** True while another dispatch could take a slot at once. */
  hasFreeSlot(): boolean {
    return this.slots.size < this.options.maxConcurrent();
  }

  /** Puts a dispatch at the end of the line; returns its position, counting from 1. */
  push(id: string): number {
    this.waiting.push(id);
    return this.waiting.length;
  }

  /** Puts a dispatch at the front of the line, as one interrupted goes before the others. */
  putFirst(id: string): void {
    this.waiting.unshift(id);
  }

  /** Takes a waiting dispatch out of the line; false when it was not waiting. */
  remove(id: string): boolean {
    const before = this.waiting.length;
    this.waiting = this.waiting.filter((waiting) => waiting !== id);
    return this.waiting.length !== before;
  }

  /**
   * The first waiting dispatch, now holding a slot; undefined when nothing waits or every
   * slot is taken.
   */
  next(): string | undefined {
    if (this.waiting.length === 0 || !this.hasFreeSlot()) return undefined;
    const id = this.waiting.shift() as string;
    this.slots.add(id);
    return id;
  }

  /** True from the moment a dispatch takes a slot until the slot is given back. */
  holdsSlot(id: string): boolean {
    return this.slots.has(id);
  }

  /** Gives a dispatch's slot back. */
  releaseSlot(id: string): void {
    this.slots.delete(id);
  }

  /**
   * Saves the waiting order once every earlier save is done, skipping it when the order did
   * not change since the last save. Never rejects: a failure goes to `onSaveError`.
   */
  save(): Promise<void> {
    this.saving = this.saving
      .then(async () => {
        const content = JSON.stringify(this.waiting);
        if (content === this.saved) return;
        await this.options.save([...this.waiting]);
        this.saved = content;
      })
      .catch((error: Error) => this.options.onSaveError?.(error));
    return this.saving;
  }

  /** Resolves when every save asked for so far is done. */
  settled(): Promise<void> {
    return this.saving;
  }
}

import type {RowSampler} from './jsonl-scan.js'

export interface SampledRow {
  line: number
  row: number
  text: string
}

/** Bytes of row text a sample may hold in total, so huge rows cannot make memory grow with the file. */
export const SAMPLE_BUDGET_BYTES = 64 * 1024 * 1024

/**
 * Which rows the conversion check looks at: the first `head` rows (where hand edits and
 * headers end up) plus a uniform reservoir sample of the rest. Seeded, so a rerun on the same
 * file looks at the same rows. A row that would overflow the byte budget is left out.
 */
export class RowSample implements RowSampler {
  private readonly kept: SampledRow[] = []
  private readonly reservoir: SampledRow[] = []
  private seen = 0
  private pendingSlot = -1
  private state: number
  private used = 0

  constructor(
    private readonly head = 16,
    private readonly size = 48,
    seed = 0x5eed,
    private readonly budget = SAMPLE_BUDGET_BYTES,
  ) {
    this.state = seed >>> 0
  }

  wants(row: number): boolean {
    if (row <= this.head) return true
    this.seen++
    if (this.reservoir.length < this.size) {
      this.pendingSlot = this.reservoir.length
      return true
    }
    const slot = Math.floor(this.random() * this.seen)
    this.pendingSlot = slot < this.size ? slot : -1
    return this.pendingSlot !== -1
  }

  take(line: number, row: number, bytes: Uint8Array): void {
    const replaced = row > this.head && this.pendingSlot >= 0 && this.pendingSlot < this.reservoir.length ? this.reservoir[this.pendingSlot] : undefined
    const used = this.used - (replaced?.text.length ?? 0) + bytes.length
    if (used > this.budget) return
    this.used = used
    const sampled = {line, row, text: new TextDecoder().decode(bytes)}
    if (row <= this.head) this.kept.push(sampled)
    else if (this.pendingSlot === this.reservoir.length) this.reservoir.push(sampled)
    else if (this.pendingSlot >= 0) this.reservoir[this.pendingSlot] = sampled
  }

  rows(): SampledRow[] {
    return [...this.kept, ...this.reservoir].sort((a, b) => a.line - b.line)
  }

  /** The head rows alone (always kept). */
  headRows(): SampledRow[] {
    return [...this.kept]
  }

  /** The reservoir alone: a uniform sample of the rows after the head. */
  reservoirRows(): SampledRow[] {
    return [...this.reservoir]
  }

  /** mulberry32 */
  private random(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0
    let t = this.state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

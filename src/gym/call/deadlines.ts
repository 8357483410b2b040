/**
 * Timeouts of one fixed length (a row's `timeout`, each cleanup step's
 * `cleanup_timeout`) for thousands of rows, on one timer. Every entry waits
 * the same delay, so deadlines come due in the order they were added: the
 * queue keeps them in a list and arms a single timer for the earliest live
 * one, instead of creating and cancelling a timer per row.
 */
interface Entry {
  at: number
  fn: (() => void) | undefined
}

const COMPACT_MIN = 1024

export class DeadlineQueue {
  private entries: Entry[] = []
  private head = 0
  private live = 0
  private timer?: NodeJS.Timeout
  private firing = false

  constructor(readonly delayMs: number) {}

  /** Call fn after delayMs unless the returned cancel function runs first. */
  add(fn: () => void): () => void {
    const entry: Entry = {at: performance.now() + this.delayMs, fn}
    this.entries.push(entry)
    this.live++
    // entries come due in insertion order: a new one never needs an earlier timer
    if (this.timer === undefined && !this.firing) this.arm(entry.at)
    return () => {
      if (entry.fn === undefined) return
      entry.fn = undefined
      this.live--
      if (this.live === 0) this.reset()
      else if (this.entries.length - this.head > COMPACT_MIN && this.live * 4 < this.entries.length - this.head) this.compact()
    }
  }

  /** Entries waiting (for tests). */
  get size(): number {
    return this.live
  }

  private arm(at: number): void {
    this.timer = setTimeout(() => this.fire(), Math.max(0, Math.ceil(at - performance.now())))
  }

  private fire(): void {
    this.timer = undefined
    this.firing = true
    const now = performance.now()
    while (this.head < this.entries.length) {
      const entry = this.entries[this.head]
      if (entry.fn !== undefined && entry.at > now) break
      this.head++
      const fn = entry.fn
      if (fn !== undefined) {
        entry.fn = undefined
        this.live--
        try {
          fn()
        } catch (error) {
          this.firing = false
          this.rearm()
          throw error
        }
      }
    }
    this.firing = false
    this.rearm()
  }

  private rearm(): void {
    while (this.head < this.entries.length && this.entries[this.head].fn === undefined) this.head++
    if (this.head > COMPACT_MIN && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head)
      this.head = 0
    }
    if (this.live === 0) this.reset()
    else if (this.timer === undefined) this.arm(this.entries[this.head].at)
  }

  private compact(): void {
    this.entries = this.entries.slice(this.head).filter((e) => e.fn !== undefined)
    this.head = 0
  }

  private reset(): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    this.entries = []
    this.head = 0
  }
}

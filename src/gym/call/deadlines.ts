/** Something a deadline can abort (a row's Cancel). */
export interface Abortable {
  abort(reason: unknown): void
}

/** A pending deadline; pass it back to DeadlineQueue.remove when the work finished in time. */
export interface Deadline {
  readonly at: number
  target: Abortable | undefined
}

const COMPACT_MIN = 1024

/**
 * Timeouts of one fixed length (a row's `timeout`, each cleanup step's
 * `cleanup_timeout`) for thousands of rows, on one timer. Every entry waits
 * the same delay, so deadlines come due in the order they were added: the
 * queue keeps them in a list and arms a single timer for the earliest live
 * one, instead of creating and cancelling a timer per row. When a deadline
 * passes, its target is aborted with the reason 'timeout'.
 */
export class DeadlineQueue {
  private entries: Deadline[] = []
  private head = 0
  private live = 0
  private timer?: NodeJS.Timeout
  private firing = false

  constructor(readonly delayMs: number) {
    // entries, head and timer are replaced later; written once more here, V8 does not optimize
    // the row lifecycle for their first values and throw that code away at the first compaction
    this.reset()
    this.takeEveryPath()
  }

  /**
   * The row lifecycle inlines add() and remove(). Their rare paths (the queue compacting, the
   * queue emptying) first run a thousand rows or more into a run, after V8 has optimized the
   * lifecycle without them, and V8 then throws that code away and compiles it again. Taking
   * each path once here, on targets that are never aborted, lets the first compilation know
   * them all. It leaves the queue empty, with no timer.
   */
  private takeEveryPath(): void {
    const idle: Abortable = {abort() {}}
    const entries = Array.from({length: COMPACT_MIN + 2}, () => this.add(idle))
    for (const entry of entries) this.remove(entry)
  }

  /** Abort target with 'timeout' after delayMs, unless remove() runs first. */
  add(target: Abortable): Deadline {
    const entry: Deadline = {at: performance.now() + this.delayMs, target}
    this.entries.push(entry)
    this.live++
    // entries come due in insertion order: a new one never needs an earlier timer
    if (this.timer === undefined && !this.firing) this.arm(entry.at)
    return entry
  }

  remove(entry: Deadline): void {
    if (entry.target === undefined) return
    entry.target = undefined
    this.live--
    if (this.live === 0) this.reset()
    else if (this.entries.length - this.head > COMPACT_MIN && this.live * 4 < this.entries.length - this.head) this.compact()
  }

  /** Deadlines pending. */
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
    try {
      while (this.head < this.entries.length) {
        const entry = this.entries[this.head]
        if (entry.target !== undefined && entry.at > now) break
        this.head++
        const target = entry.target
        if (target !== undefined) {
          entry.target = undefined
          this.live--
          target.abort('timeout')
        }
      }
    } finally {
      this.firing = false
      this.rearm()
    }
  }

  private rearm(): void {
    while (this.head < this.entries.length && this.entries[this.head].target === undefined) this.head++
    if (this.head > COMPACT_MIN && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head)
      this.head = 0
    }
    if (this.live === 0) this.reset()
    else if (this.timer === undefined) this.arm(this.entries[this.head].at)
  }

  private compact(): void {
    this.entries = this.entries.slice(this.head).filter((e) => e.target !== undefined)
    this.head = 0
  }

  private reset(): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    this.entries = []
    this.head = 0
  }
}

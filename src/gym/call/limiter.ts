import {onAbort} from './abort.js'

/**
 * Admission for row lifecycles: at most `limit` rows hold a slot at once, the
 * rest wait in input order. A wait can end by a slot, by its own admission
 * deadline (queue_timeout) or by cancellation of the run.
 */
export type Admission = 'admitted' | 'timeout' | 'cancelled'

interface Waiter {
  resolve: (a: Admission) => void
  timer?: NodeJS.Timeout
  done: boolean
}

export class Limiter {
  private active = 0
  private readonly queue: Waiter[] = []
  private head = 0
  /** Called whenever a slot becomes free (none was waiting for it). */
  onRelease: (() => void) | undefined

  constructor(readonly limit: number) {}

  get running(): number {
    return this.active
  }

  /** Take a free slot now if nobody is waiting for one; false otherwise. */
  tryAcquire(): boolean {
    while (this.head < this.queue.length && this.queue[this.head].done) this.head++
    if (this.active < this.limit && this.head === this.queue.length) {
      this.active++
      return true
    }
    return false
  }

  /** Rows waiting for a slot. */
  get waiting(): number {
    let n = 0
    for (let i = this.head; i < this.queue.length; i++) if (!this.queue[i].done) n++
    return n
  }

  acquire(deadlineMs: number | undefined, signal: AbortSignal): Promise<Admission> {
    if (signal.aborted) return Promise.resolve('cancelled')
    while (this.head < this.queue.length && this.queue[this.head].done) this.head++
    if (this.active < this.limit && this.head === this.queue.length) {
      this.active++
      return Promise.resolve('admitted')
    }
    return new Promise<Admission>((resolve) => {
      const waiter: Waiter = {resolve, done: false}
      let unsubscribe = () => {}
      const settle = (a: Admission) => {
        if (waiter.done) return
        waiter.done = true
        if (waiter.timer) clearTimeout(waiter.timer)
        unsubscribe()
        resolve(a)
      }
      waiter.resolve = settle
      if (deadlineMs !== undefined) {
        const wait = deadlineMs - Date.now()
        if (wait <= 0) {
          resolve('timeout')
          return
        }
        waiter.timer = setTimeout(() => settle('timeout'), wait)
      }
      unsubscribe = onAbort(signal, () => settle('cancelled'))
      this.queue.push(waiter)
    })
  }

  release(): void {
    while (this.head < this.queue.length) {
      const next = this.queue[this.head++]
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue.splice(0, this.head)
        this.head = 0
      }
      if (!next.done) {
        next.resolve('admitted')
        return
      }
    }
    this.active--
    this.onRelease?.()
  }
}

import {describe, expect, it} from 'vitest'

import {Limiter} from '../../../src/gym/call/limiter.js'

describe('admission limiter', () => {
  it('admits in input order up to the limit and hands freed slots to the next waiter', async () => {
    const limiter = new Limiter(2)
    const signal = new AbortController().signal
    expect(await limiter.acquire(undefined, signal)).toBe('admitted')
    expect(await limiter.acquire(undefined, signal)).toBe('admitted')
    const order: number[] = []
    const third = limiter.acquire(undefined, signal).then((a) => order.push(3) && a)
    const fourth = limiter.acquire(undefined, signal).then((a) => order.push(4) && a)
    limiter.release()
    limiter.release()
    expect(await third).toBe('admitted')
    expect(await fourth).toBe('admitted')
    expect(order).toEqual([3, 4])
    expect(limiter.running).toBe(2)
  })

  it('fails a waiter at its admission deadline without touching running rows', async () => {
    const limiter = new Limiter(1)
    const signal = new AbortController().signal
    await limiter.acquire(undefined, signal)
    const waited = await limiter.acquire(Date.now() + 30, signal)
    expect(waited).toBe('timeout')
    expect(limiter.running).toBe(1)
    limiter.release()
    expect(limiter.running).toBe(0)
    expect(await limiter.acquire(Date.now() + 30, signal)).toBe('admitted')
  })

  it('ends queued waits on cancellation', async () => {
    const limiter = new Limiter(1)
    const controller = new AbortController()
    await limiter.acquire(undefined, controller.signal)
    const waiting = limiter.acquire(undefined, controller.signal)
    controller.abort()
    expect(await waiting).toBe('cancelled')
    expect(await limiter.acquire(undefined, controller.signal)).toBe('cancelled')
  })
})

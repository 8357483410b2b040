/**
 * Many rows wait on the same run-wide cancellation signal. EventTarget
 * listeners are checked for duplicates on every add, so hundreds of them make
 * each add and remove slow; here each signal gets one real listener and
 * subscribers live in a Set.
 */
const subscribers = new WeakMap<AbortSignal, Set<() => void>>()

/** Call fn once when signal aborts; returns the unsubscribe function. */
export function onAbort(signal: AbortSignal, fn: () => void): () => void {
  let set = subscribers.get(signal)
  if (!set) {
    const created = new Set<() => void>()
    set = created
    subscribers.set(signal, created)
    signal.addEventListener(
      'abort',
      () => {
        for (const f of [...created]) f()
        created.clear()
      },
      {once: true},
    )
  }
  set.add(fn)
  const s = set
  return () => {
    s.delete(fn)
  }
}

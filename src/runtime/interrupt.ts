/**
 * Ctrl+C and SIGTERM, in one place. Two things happen on an interrupt:
 *
 * - Cleanups (`removeOnInterrupt`): what a command has created and must remove by id, even
 *   halfway through creating it (a probe container, a partial output file). They all run,
 *   bounded by a deadline.
 * - Handlers (`onInterrupt`): a command that winds down itself (stops a script, cancels rows,
 *   asks about a job) is told with an AbortSignal. A second interrupt exits at once, unless the
 *   handler keeps that for itself.
 *
 * When no handler is listening, the process exits 130 once the cleanups are done, saying what
 * they removed.
 */

/** Removes what it is responsible for; may say what it removed, for the exit message. */
type Cleanup = () => Promise<string | void> | string | void

const cleanups = new Set<Cleanup>()
const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM']
const DEADLINE_MS = 15_000
const INTERRUPTED = 130

interface Handler {
  controller: AbortController
  notice?: (signal: NodeJS.Signals) => void
  /** A second interrupt is the handler's to decide (e.g. it is asking a question), not an exit. */
  keepsSecond: boolean
}

const handlers = new Set<Handler>()
let received = 0
let running: Promise<string[]> | undefined

function onSignal(signal: NodeJS.Signals): void {
  received++
  if (handlers.size > 0) {
    if (received > 1 && ![...handlers].some((h) => h.keepsSecond)) process.exit(INTERRUPTED)
    for (const handler of handlers) {
      if (handler.controller.signal.aborted) continue
      handler.notice?.(signal)
      handler.controller.abort(signal)
    }
    void runCleanups()
    return
  }
  void runCleanups().then((said) => {
    process.stderr.write(`interrupted (${signal}): ${said.length > 0 ? said.join('; ') : 'what this command created was removed'}\n`)
    process.exit(INTERRUPTED)
  })
}

function runCleanups(): Promise<string[]> {
  running ??= (async () => {
    const pending = [...cleanups].map(async (cleanup) => {
      try {
        return await cleanup()
      } catch {
        return undefined
      }
    })
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), DEADLINE_MS)
    })
    const said = await Promise.race([Promise.all(pending), deadline])
    clearTimeout(timer)
    return (said ?? []).filter((s): s is string => typeof s === 'string' && s !== '')
  })()
  return running
}

function listen(): void {
  if (cleanups.size + handlers.size === 1) for (const signal of SIGNALS) process.on(signal, onSignal)
}

function unlisten(): void {
  if (cleanups.size + handlers.size === 0 && running === undefined) for (const signal of SIGNALS) process.off(signal, onSignal)
}

/** Register cleanup until the returned function is called (call it once the thing is gone). */
export function removeOnInterrupt(cleanup: Cleanup): () => void {
  cleanups.add(cleanup)
  listen()
  return () => {
    cleanups.delete(cleanup)
    unlisten()
  }
}

export interface InterruptOptions {
  /** Tell people what happens now, when the first interrupt arrives (e.g. "stopping the prepare script"). */
  notice?: (signal: NodeJS.Signals) => void
  keepsSecond?: boolean
}

/**
 * Run `work` with an AbortSignal that the first Ctrl+C / SIGTERM aborts (its reason: the
 * signal's name); a second one exits 130 at once, skipping any further cleanup.
 */
export async function onInterrupt<T>(options: InterruptOptions, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const handler: Handler = {controller: new AbortController(), notice: options.notice, keepsSecond: Boolean(options.keepsSecond)}
  handlers.add(handler)
  listen()
  try {
    return await work(handler.controller.signal)
  } finally {
    handlers.delete(handler)
    unlisten()
  }
}

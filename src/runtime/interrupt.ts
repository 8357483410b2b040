/**
 * Things a command has created and must remove by id if the user interrupts it (Ctrl+C,
 * SIGTERM), even halfway through creating them. While any cleanup is registered, a signal runs
 * every cleanup (bounded by a deadline); when nothing else listens for the signal the process
 * then exits 130, otherwise the other listener decides what happens next.
 */

type Cleanup = () => Promise<void>

const cleanups = new Set<Cleanup>()
const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM']
const DEADLINE_MS = 15_000
let running: Promise<void> | undefined

function onSignal(signal: NodeJS.Signals): void {
  const othersListen = process.listenerCount(signal) > 1
  running ??= runCleanups()
  void running.then(() => {
    if (!othersListen) {
      process.stderr.write(`interrupted (${signal}): what this command created was removed\n`)
      process.exit(130)
    }
  })
}

async function runCleanups(): Promise<void> {
  const pending = [...cleanups].map((cleanup) => cleanup().catch(() => undefined))
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, DEADLINE_MS)
  })
  await Promise.race([Promise.all(pending), deadline])
  clearTimeout(timer)
}

/** Register cleanup until the returned function is called (call it once the thing is gone). */
export function removeOnInterrupt(cleanup: Cleanup): () => void {
  if (cleanups.size === 0) for (const signal of SIGNALS) process.on(signal, onSignal)
  cleanups.add(cleanup)
  return () => {
    cleanups.delete(cleanup)
    if (cleanups.size === 0 && running === undefined) for (const signal of SIGNALS) process.off(signal, onSignal)
  }
}

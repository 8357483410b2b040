import {randomBytes} from 'node:crypto'
import {constants, promises as fsp, rmSync} from 'node:fs'
import path from 'node:path'

/** A hidden, unique sibling of target: on the same filesystem, so a rename moves it into place. */
function temporarySibling(target: string): string {
  return path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
}

/**
 * Write a file atomically: a temporary sibling is written, flushed and renamed
 * over the target, so a reader never sees a half-written file and a failure
 * leaves the previous content in place.
 */
export async function writeFileAtomic(target: string, data: string | Uint8Array, mode?: number): Promise<void> {
  await fsp.mkdir(path.dirname(target), {recursive: true})
  const tmp = temporarySibling(target)
  const handle = await fsp.open(tmp, 'w', mode ?? 0o644)
  try {
    await handle.writeFile(data)
    await handle.sync()
  } catch (error) {
    await handle.close()
    await fsp.rm(tmp, {force: true})
    throw error
  }
  await handle.close()
  try {
    if (mode !== undefined) await fsp.chmod(tmp, mode)
    await fsp.rename(tmp, target)
  } catch (error) {
    await fsp.rm(tmp, {force: true})
    throw error
  }
}

/** Temporary siblings not yet committed or aborted, so an interrupted command can remove them. */
const openTemporaries = new Set<string>()

/** A temporary path next to target for streaming writers; commit() renames it into place. */
export async function openAtomicTarget(target: string): Promise<{tmpPath: string; commit: () => Promise<void>; abort: () => Promise<void>}> {
  await fsp.mkdir(path.dirname(target), {recursive: true})
  const tmpPath = temporarySibling(target)
  openTemporaries.add(tmpPath)
  return {
    tmpPath,
    commit: async () => {
      await fsp.rename(tmpPath, target)
      openTemporaries.delete(tmpPath)
    },
    abort: async () => {
      await fsp.rm(tmpPath, {force: true})
      openTemporaries.delete(tmpPath)
    },
  }
}

/**
 * Remove every temporary sibling still open, synchronously: for a signal
 * handler that is about to exit, where awaiting a stream's end is not possible.
 * Returns the paths removed.
 */
export function removeOpenTemporariesSync(): string[] {
  const removed: string[] = []
  for (const tmpPath of openTemporaries) {
    try {
      rmSync(tmpPath, {force: true})
      removed.push(tmpPath)
    } catch {
      // left for the user to see; the message names the output as unwritten either way
    }
    openTemporaries.delete(tmpPath)
  }
  return removed
}

export async function pathExists(p: string): Promise<boolean> {
  try {
    await fsp.access(p, constants.F_OK)
    return true
  } catch {
    return false
  }
}

export async function readTextIfExists(p: string): Promise<string | undefined> {
  try {
    return await fsp.readFile(p, 'utf8')
  } catch (error: any) {
    if (error?.code === 'ENOENT') return undefined
    throw error
  }
}

/** True when child is inside (or equal to) parent after resolving both. */
export function isInside(parent: string, child: string): boolean {
  const rel = path.relative(path.resolve(parent), path.resolve(child))
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel))
}

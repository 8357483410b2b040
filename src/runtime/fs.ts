import {randomBytes} from 'node:crypto'
import {constants, promises as fsp} from 'node:fs'
import path from 'node:path'

/**
 * Write a file atomically: a temporary sibling is written, flushed and renamed
 * over the target, so a reader never sees a half-written file and a failure
 * leaves the previous content in place.
 */
export async function writeFileAtomic(target: string, data: string | Uint8Array, mode?: number): Promise<void> {
  const dir = path.dirname(target)
  await fsp.mkdir(dir, {recursive: true})
  const tmp = path.join(dir, `.${path.basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
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

/** A temporary path next to target for streaming writers; commit() renames it into place. */
export async function openAtomicTarget(target: string): Promise<{tmpPath: string; commit: () => Promise<void>; abort: () => Promise<void>}> {
  const dir = path.dirname(target)
  await fsp.mkdir(dir, {recursive: true})
  const tmpPath = path.join(dir, `.${path.basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
  return {
    tmpPath,
    commit: async () => {
      await fsp.rename(tmpPath, target)
    },
    abort: async () => {
      await fsp.rm(tmpPath, {force: true})
    },
  }
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

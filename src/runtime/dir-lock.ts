/**
 * One owner at a time for a directory (a `call` evidence folder): a lock file created exclusively
 * (O_EXCL), naming its owner. An owner that died (its pid gone, or reused by another process since)
 * leaves a stale lock, which the next run takes over; a live owner's lock is never taken, and the
 * run that finds it is refused at once, told who holds it.
 */
import {randomBytes} from 'node:crypto'
import {promises as fsp, readFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {codeOf, ExitCode, GymError} from '../errors.js'

export const LOCK_FILE = '.gymrecipe.lock'

export interface LockOwner {
  pid: number
  host: string
  /** When the lock was taken (ISO time). */
  since: string
  /** The owner's start time in clock ticks since boot (/proc/<pid>/stat), to tell a reused pid. */
  processStart: string | null
  /** What holds it, in words. */
  what: string
}

export interface DirLock {
  readonly file: string
  /** Remove the lock, if it is still this run's. */
  release(): Promise<void>
}

/** Field 22 of /proc/<pid>/stat: the process's start time; null where /proc cannot tell. */
function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name (field 2) may hold spaces and parentheses: count from its closing one.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return fields[19] ?? null
  } catch {
    return null
  }
}

/** Whether the owner of a lock is still running (on another host: assumed so, it cannot be asked). */
function ownerAlive(owner: LockOwner): boolean {
  if (owner.host !== os.hostname()) return true
  try {
    process.kill(owner.pid, 0)
  } catch (error) {
    if (codeOf(error) !== 'EPERM') return false
  }
  // The pid runs, but is it the same process? A pid is reused once its owner is gone.
  const start = processStart(owner.pid)
  return owner.processStart === null || start === null || start === owner.processStart
}

function parseOwner(text: string): LockOwner | undefined {
  try {
    const value = JSON.parse(text) as Partial<LockOwner>
    if (typeof value.pid === 'number' && typeof value.host === 'string') {
      return {pid: value.pid, host: value.host, since: String(value.since ?? '?'), processStart: typeof value.processStart === 'string' ? value.processStart : null, what: String(value.what ?? '?')}
    }
  } catch {
    // not a lock a gymrecipe run wrote whole
  }
  return undefined
}

function lockedError(dir: string, owner: LockOwner | undefined): GymError {
  const who = owner ? `pid ${owner.pid} on ${owner.host} (${owner.what}, since ${owner.since})` : 'another run (its lock file is being written)'
  return new GymError(`${dir} is in use by ${who}`, {
    code: 'E_DIR_LOCKED',
    exit: ExitCode.precondition,
    hint: `One run at a time per folder: wait for it to finish (or stop it), then run again; a run that crashed frees it by itself. The lock is ${path.join(dir, LOCK_FILE)}.`,
    details: {lock: path.join(dir, LOCK_FILE), ...(owner ? {pid: owner.pid, host: owner.host, since: owner.since} : {})},
  })
}

/**
 * Take the directory for this run, or throw E_DIR_LOCKED (exit 3) naming the live owner. A stale
 * lock is moved aside (rename: only one of several racing runs gets it) and removed.
 */
export async function lockDirectory(dir: string, what: string): Promise<DirLock> {
  const file = path.join(dir, LOCK_FILE)
  const mine: LockOwner = {pid: process.pid, host: os.hostname(), since: new Date().toISOString(), processStart: processStart(process.pid), what}
  const text = `${JSON.stringify(mine)}\n`
  for (let attempt = 0; attempt < 20; attempt++) {
    try {
      const handle = await fsp.open(file, 'wx', 0o600)
      try {
        await handle.writeFile(text)
        await handle.sync()
      } finally {
        await handle.close()
      }
      return {
        file,
        async release() {
          const now = await fsp.readFile(file, 'utf8').catch(() => undefined)
          if (now === text) await fsp.unlink(file).catch(() => undefined)
        },
      }
    } catch (error) {
      if (codeOf(error) !== 'EEXIST') throw error
    }
    const held = await fsp.readFile(file, 'utf8').catch(() => undefined)
    if (held === undefined) continue
    const owner = parseOwner(held)
    if (!owner) {
      // Half written by a run starting right now, or left by one killed while writing it.
      const age = Date.now() - ((await fsp.stat(file).catch(() => undefined))?.mtimeMs ?? Date.now())
      if (age < 2000) {
        await new Promise((resolve) => setTimeout(resolve, 50))
        continue
      }
    } else if (ownerAlive(owner)) {
      throw lockedError(dir, owner)
    }
    const aside = `${file}.stale-${randomBytes(6).toString('hex')}`
    try {
      await fsp.rename(file, aside)
    } catch (error) {
      if (codeOf(error) === 'ENOENT') continue
      throw error
    }
    // What was moved may be a live run's lock taken in the meantime: it goes back untouched.
    const moved = parseOwner(await fsp.readFile(aside, 'utf8').catch(() => ''))
    if (moved && ownerAlive(moved)) {
      await fsp.link(aside, file).catch(() => undefined)
      await fsp.unlink(aside).catch(() => undefined)
      throw lockedError(dir, moved)
    }
    await fsp.unlink(aside).catch(() => undefined)
  }
  throw lockedError(dir, undefined)
}

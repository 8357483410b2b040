import {randomBytes} from 'node:crypto'
import {constants, createWriteStream, promises as fsp, rmSync} from 'node:fs'
import path from 'node:path'
import {Writable} from 'node:stream'

import {codeOf, GymError, ExitCode} from '../errors.js'

/**
 * How an output path is written. Regular files (and new paths) are replaced atomically by a
 * rename; a pipe, a device, a socket or `-` (stdout) is written to directly, since renaming over
 * it would replace the device itself; a symbolic link to a regular file is refused rather than
 * replaced by a file of its own.
 */
export async function outputKind(target: string): Promise<{kind: 'atomic' | 'direct' | 'stdout'; path: string; pipe?: fsp.FileHandle}> {
  // stdout may be a socket, which cannot be opened by path: it is written as the process's stream.
  if (target === '-' || target === '/dev/stdout') return {kind: 'stdout', path: '-'}
  const link = await fsp.lstat(target).catch((error: unknown) => {
    if (codeOf(error) === 'ENOENT') return undefined
    throw error
  })
  if (!link) return {kind: 'atomic', path: target}
  const stat = link.isSymbolicLink() ? await fsp.stat(target).catch(() => undefined) : link
  if (link.isSymbolicLink() && (!stat || stat.isFile())) {
    const real = await fsp.realpath(target).catch(() => undefined)
    throw new GymError(`output ${target} is a symbolic link${real ? ` to ${real}` : ' whose target does not exist'}; it would be replaced by a regular file`, {
      code: 'E_OUTPUT_SYMLINK',
      exit: ExitCode.usage,
      hint: real ? `Pass the file itself (${real}) to replace it, or another path.` : 'Remove the dangling link or pass another path.',
      location: {file: target},
    })
  }
  if (stat!.isDirectory()) {
    throw new GymError(`output ${target} is a directory`, {code: 'E_OUTPUT_IS_DIR', exit: ExitCode.usage, hint: 'Pass a file path, e.g. <dir>/out.jsonl.', location: {file: target}})
  }
  if (stat!.isFIFO()) return {kind: 'direct', path: target, pipe: await openPipeWhenRead(target)}
  return stat!.isFile() ? {kind: 'atomic', path: target} : {kind: 'direct', path: target}
}

const READER_POLL_MS = 100

/**
 * A named pipe opened for writing once it has a reader. A plain open would block a thread of the
 * I/O pool until one comes, and a blocked open keeps the process from exiting even on SIGTERM; a
 * non-blocking open answers at once (ENXIO: no reader yet), so the wait is a poll that any signal
 * ends. The non-blocking end is held until the blocking one is open, so the reader never sees
 * the pipe without a writer (which it would read as the end of the data).
 */
async function openPipeWhenRead(fifo: string): Promise<fsp.FileHandle> {
  for (;;) {
    let probe: fsp.FileHandle | undefined
    try {
      probe = await fsp.open(fifo, constants.O_WRONLY | constants.O_NONBLOCK)
    } catch (error) {
      if (codeOf(error) !== 'ENXIO') throw attributeTo(error, fifo)
    }
    if (probe) {
      try {
        return await fsp.open(fifo, 'a')
      } finally {
        await probe.close()
      }
    }
    await new Promise((resolve) => setTimeout(resolve, READER_POLL_MS))
  }
}

/** A hidden, unique sibling of target: on the same filesystem, so a rename moves it into place. */
function temporarySibling(target: string): string {
  return path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
}

/**
 * Write a file atomically: a temporary sibling is written, flushed and renamed
 * over the target, so a reader never sees a half-written file and a failure
 * leaves the previous content in place.
 */
export async function writeFileAtomic(target: string, data: string | Uint8Array, mode?: number, options: {unchangedFrom?: string | null} = {}): Promise<void> {
  const out = await outputKind(target)
  if (out.kind === 'stdout') return void (await new Promise<void>((resolve, reject) => process.stdout.write(data, (error) => (error ? reject(error) : resolve()))))
  if (out.kind === 'direct' && out.pipe) {
    try {
      return await out.pipe.writeFile(data)
    } finally {
      await out.pipe.close()
    }
  }
  if (out.kind === 'direct') return fsp.writeFile(out.path, data)
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
    if (options.unchangedFrom !== undefined) await refuseIfChanged(target, options.unchangedFrom)
    await fsp.rename(tmp, target)
  } catch (error) {
    await fsp.rm(tmp, {force: true})
    throw error
  }
}

/**
 * The file still holds what the caller read (null: it still does not exist); otherwise the
 * caller's change is not written over the user's.
 */
async function refuseIfChanged(target: string, read: string | null): Promise<void> {
  const now = await fsp.readFile(target, 'utf8').catch((error: unknown) => {
    if (codeOf(error) === 'ENOENT') return null
    throw error
  })
  if (now === read) return
  throw new GymError(`${target} changed while gymrecipe was writing it; it was left as it is now`, {
    code: 'E_CHANGED_WHILE_WRITING',
    exit: ExitCode.precondition,
    hint: 'Save your edits, then run the command again.',
    location: {file: target},
  })
}

/** Temporary siblings not yet committed or aborted, so an interrupted command can remove them. */
const openTemporaries = new Set<string>()

export interface AtomicTarget {
  /** Where the content goes before commit(): a temporary sibling, or the pipe or device itself. */
  tmpPath: string
  /** Written in place (a pipe, a device, stdout): nothing to rename, sync or remove. */
  direct: boolean
  /**
   * A stream onto tmpPath (or stdout), for streaming writers. With `flush`, the file is synced
   * before the stream finishes, and in the background every `syncEvery` bytes (default 32 MiB).
   */
  createStream(options?: {highWaterMark?: number; flush?: boolean; syncEvery?: number}): Writable
  commit: () => Promise<void>
  abort: () => Promise<void>
}

/** A Writable onto the process's stdout that never closes it. */
function stdoutStream(): Writable {
  return new Writable({
    write: (chunk, _encoding, done) => void process.stdout.write(chunk, (error) => done(error ?? undefined)),
  })
}

/**
 * A temporary path next to target for streaming writers; commit() renames it into place. For a
 * pipe, a device or `-`, the content is written in place and commit/abort do nothing.
 */
export async function openAtomicTarget(target: string): Promise<AtomicTarget> {
  const out = await outputKind(target)
  const nothing = async () => {}
  if (out.kind === 'stdout') return {tmpPath: '-', direct: true, createStream: stdoutStream, commit: nothing, abort: nothing}
  if (out.kind === 'direct') {
    const {pipe} = out
    const createStream = (o?: Parameters<AtomicTarget['createStream']>[0]) =>
      (pipe ? createWriteStream(out.path, {...o, fd: pipe, autoClose: true}) : createWriteStream(out.path, {flags: 'a', ...o})).on('error', (error) => attributeTo(error, out.path))
    return {tmpPath: out.path, direct: true, createStream, commit: nothing, abort: nothing}
  }
  await fsp.mkdir(path.dirname(target), {recursive: true})
  const tmpPath = temporarySibling(target)
  openTemporaries.add(tmpPath)
  return {
    tmpPath,
    direct: false,
    createStream: (o) => (o?.flush ? syncedFileStream(tmpPath, o.highWaterMark, o.syncEvery) : createWriteStream(tmpPath, o)).on('error', (error: unknown) => attributeTo(error, target)),
    commit: async () => {
      await fsp.rename(tmpPath, target).catch((error) => {
        throw attributeTo(error, target)
      })
      openTemporaries.delete(tmpPath)
    },
    abort: async () => {
      await fsp.rm(tmpPath, {force: true})
      openTemporaries.delete(tmpPath)
    },
  }
}

/** Bytes a synced stream writes between two background syncs. */
const SYNC_EVERY = 32 * 1024 * 1024

/**
 * The syncs of one file being written, apart from its writes so that no write waits for one.
 * What is written is synced in the background every `every` bytes (and whenever now() asks), so
 * the sync before the file is closed has little left to write: that wait is the disk's, at about
 * 0.6 ms per MB on the development VM, and a fast writer writes megabytes in well under a second.
 */
export class BackgroundSync {
  private unsynced = 0
  private syncing: Promise<void> = Promise.resolve()
  /** The first background sync that failed. */
  private error: unknown = undefined

  constructor(private readonly every: number) {}

  /** Count bytes written through handle; a sync starts once `every` bytes are unsynced. */
  wrote(handle: fsp.FileHandle, bytes: number): void {
    this.unsynced += bytes
    if (this.unsynced >= this.every) this.start(handle)
  }

  /** Sync whatever is written and not synced yet. */
  now(handle: fsp.FileHandle | undefined): void {
    if (this.unsynced > 0 && handle) this.start(handle)
  }

  /** The background syncs started so far, finished. */
  settled(): Promise<void> {
    return this.syncing
  }

  /**
   * Before handle is closed: the syncs under way finish, then the rest is synced. Rejects with
   * the first sync that failed, a background one first.
   */
  async finish(handle: fsp.FileHandle): Promise<void> {
    await this.syncing
    this.unsynced = 0
    const background = this.error
    try {
      await handle.sync()
    } catch (error) {
      throw background ?? error
    }
    if (background !== undefined) throw background
  }

  private start(handle: fsp.FileHandle): void {
    this.unsynced = 0
    this.syncing = this.syncing.then(() => handle.datasync()).catch((error: unknown) => void (this.error ??= error))
  }
}

/**
 * A stream onto a new file that is fsynced before it finishes. What it has written is also
 * synced in the background every SYNC_EVERY bytes, so the disk works while the producer does
 * and the last fsync has little left to do (for a large output, that wait was most of a
 * command's idle time).
 */
function syncedFileStream(file: string, highWaterMark?: number, syncEvery = SYNC_EVERY): Writable {
  const opened = fsp.open(file, 'w')
  // an open failure is reported by the first write or by the end of the stream
  opened.catch(() => undefined)
  const syncs = new BackgroundSync(syncEvery)
  const writeAll = async (handle: fsp.FileHandle, chunk: Buffer) => {
    for (let offset = 0; offset < chunk.length; ) offset += (await handle.write(chunk, offset, chunk.length - offset)).bytesWritten
  }
  return new Writable({
    highWaterMark,
    write(chunk: Buffer, _encoding, done) {
      opened
        .then(async (handle) => {
          await writeAll(handle, chunk)
          syncs.wrote(handle, chunk.length)
        })
        .then(() => done(), done)
    },
    final(done) {
      opened
        .then((handle) => syncs.finish(handle))
        .then(() => done(), done)
    },
    // after final() and after any failure alike: the one place the file is closed
    destroy(error, done) {
      opened
        .then(async (handle) => {
          await syncs.settled()
          await handle.close()
        })
        .catch(() => undefined)
        .then(() => done(error))
    },
  })
}

/**
 * A file-system error met while writing target through its temporary sibling names the target
 * (the file the user asked for), not the sibling or nothing at all. Returns the error.
 */
export function attributeTo(error: unknown, target: string): unknown {
  if (error instanceof Error && typeof (error as NodeJS.ErrnoException).code === 'string') {
    const errno = error as NodeJS.ErrnoException
    if (errno.path === undefined || openTemporaries.has(errno.path)) errno.path = target
  }
  return error
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
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return undefined
    // Node leaves the path out of some read errors (EISDIR): the message then names no file.
    throw attributeTo(error, p)
  }
}

/** True when child is inside (or equal to) parent after resolving both. */
export function isInside(parent: string, child: string): boolean {
  const rel = path.relative(path.resolve(parent), path.resolve(child))
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel))
}

/**
 * Create dir and any missing parents one at a time, so a failure names its real cause (a
 * recursive mkdir reports ENOENT on a read-only file system); returns those created, outermost
 * first. The error thrown is the system's, naming the folder it could not create.
 */
export async function createFolders(dir: string): Promise<string[]> {
  const missing: string[] = []
  for (let at = path.resolve(dir); !(await fsp.lstat(at).catch(() => undefined)); at = path.dirname(at)) missing.unshift(at)
  const created: string[] = []
  try {
    for (const folder of missing) {
      try {
        await fsp.mkdir(folder)
        created.push(folder)
      } catch (error) {
        // Another process made it meanwhile (two commands in one checkout): it is there, not ours.
        if (codeOf(error) !== 'EEXIST' || !(await fsp.stat(folder).catch(() => undefined))?.isDirectory()) throw error
      }
    }
  } catch (error) {
    for (const folder of [...created].reverse()) await fsp.rmdir(folder).catch(() => undefined)
    throw error
  }
  return created
}

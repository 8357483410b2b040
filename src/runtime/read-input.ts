/**
 * Reading a small input file (recipe.yaml, env.sh, a Gym config, a call config) with a bounded
 * cost: it must be a regular file (a pipe would block the read forever, a device never ends), no
 * larger than its limit, and text. Opening uses O_NONBLOCK so a FIFO put where a file belongs is
 * refused instead of waiting for a writer.
 */
import {constants, promises as fsp} from 'node:fs'

import {codeOf, ExitCode, fromSystemError, GymError, isSystemError} from '../errors.js'

export interface InputFile {
  /** What the file is, in words: "recipe.yaml", "the Gym config". */
  what: string
  /** Largest accepted size in bytes. */
  maxBytes: number
  /** Refuse NUL bytes and invalid UTF-8 (text the YAML or shell reader would otherwise take as is). */
  strictText?: boolean
  /** What to do about it, added to each refusal. */
  hint?: string
  /** Read only the first maxBytes of a larger file, cut at its last whole line (a sample). */
  head?: boolean
}

const MiB = 1024 * 1024

/** Limits for the inputs gymrecipe reads whole; generous next to real files (the largest Gym config is 30 KB). */
export const INPUT_LIMITS = {
  recipeYaml: 4 * MiB,
  envSh: 1 * MiB,
  /** A script, verifier, README or PITFAIL.md of a recipe. */
  recipeFile: 8 * MiB,
  gymConfig: 1 * MiB,
  callConfig: 4 * MiB,
  taskSpec: 4 * MiB,
  /** How much of a --data file `new` samples (prepare and the data rung read all of it). */
  dataSample: 4 * MiB,
} as const

function kindOf(stat: {isDirectory(): boolean; isFIFO(): boolean; isCharacterDevice(): boolean; isBlockDevice(): boolean; isSocket(): boolean}): string {
  if (stat.isDirectory()) return 'a directory'
  if (stat.isFIFO()) return 'a pipe (FIFO)'
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return 'a device'
  if (stat.isSocket()) return 'a socket'
  return 'not a regular file'
}

function refusal(file: string, spec: InputFile, why: string, code: string, kind?: string, line?: number): GymError {
  return new GymError(`${spec.what} ${why}`, {code, exit: ExitCode.usage, hint: spec.hint ?? 'Point it at the regular text file it should be.', location: {file, line}, details: kind ? {kind} : undefined})
}

/** The file's text, or undefined when it does not exist; refused (exit 2) when it is no small text file. */
export async function readInputText(file: string, spec: InputFile): Promise<string | undefined> {
  let handle: fsp.FileHandle
  try {
    handle = await fsp.open(file, constants.O_RDONLY | constants.O_NONBLOCK)
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return undefined
    if (codeOf(error) === 'ENXIO') throw refusal(file, spec, 'is a socket or a pipe with no writer, not a file', 'E_INPUT_NOT_FILE')
    throw isSystemError(error) ? fromSystemError(error) : error
  }
  try {
    const stat = await handle.stat()
    if (!stat.isFile()) throw refusal(file, spec, `is ${kindOf(stat)}, not a file`, 'E_INPUT_NOT_FILE', stat.isDirectory() ? 'directory' : 'special')
    if (stat.size > spec.maxBytes && !spec.head) throw refusal(file, spec, `is ${stat.size} bytes, over the ${spec.maxBytes}-byte limit for it`, 'E_INPUT_TOO_LARGE')
    // Read at most one byte past the limit: a file growing while read is still bounded.
    const buffer = Buffer.alloc(Math.min(spec.maxBytes + 1, Math.max(stat.size + 1, 1)))
    let length = 0
    for (;;) {
      const {bytesRead} = await handle.read(buffer, length, buffer.length - length, length)
      if (bytesRead === 0) break
      length += bytesRead
      if (length === buffer.length) {
        if (length > spec.maxBytes && spec.head) {
          const cut = buffer.subarray(0, spec.maxBytes).lastIndexOf(0x0a)
          length = cut >= 0 ? cut + 1 : 0
          break
        }
        if (length > spec.maxBytes) throw refusal(file, spec, `grew past the ${spec.maxBytes}-byte limit for it while being read`, 'E_INPUT_TOO_LARGE')
        break
      }
    }
    const bytes = buffer.subarray(0, length)
    if (spec.strictText) {
      const nul = bytes.indexOf(0)
      if (nul >= 0) throw refusal(file, spec, 'holds a NUL byte, so it is not text', 'E_INPUT_NOT_TEXT', undefined, lineAt(bytes, nul))
      try {
        return new TextDecoder('utf-8', {fatal: true, ignoreBOM: true}).decode(bytes)
      } catch {
        throw refusal(file, spec, 'is not valid UTF-8 text', 'E_INPUT_NOT_TEXT', undefined, lineAt(bytes, firstInvalidUtf8(bytes)))
      }
    }
    return bytes.toString('utf8')
  } catch (error) {
    throw isSystemError(error) ? fromSystemError(Object.assign(error, {path: error.path ?? file})) : error
  } finally {
    await handle.close()
  }
}

function lineAt(bytes: Buffer, offset: number): number {
  let line = 1
  for (let i = 0; i < offset && i < bytes.length; i++) if (bytes[i] === 0x0a) line++
  return line
}

/** Offset of the first byte of the first invalid UTF-8 sequence (RFC 3629: no overlongs, no surrogates). */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i]
    const need = b < 0x80 ? 0 : b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : -1
    if (need < 0 || i + need > bytes.length - 1) return i
    const low = b === 0xe0 ? 0xa0 : b === 0xf0 ? 0x90 : 0x80
    const high = b === 0xed ? 0x9f : b === 0xf4 ? 0x8f : 0xbf
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k]
      if (c < (k === 1 ? low : 0x80) || c > (k === 1 ? high : 0xbf)) return i
    }
    i += need + 1
  }
  return bytes.length
}

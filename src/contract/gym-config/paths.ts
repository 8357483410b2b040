import {promises as fsp} from 'node:fs'
import path from 'node:path'

import {isInside} from '../../runtime/fs.js'
import {INPUT_LIMITS, readInputText} from '../../runtime/read-input.js'
import {gymConfigError, type SourceLocation} from './errors.js'
import {codeOf, isGymError} from '../../errors.js'

/** The few filesystem calls the reader needs, injectable so callers and tests control them. */
export interface GymConfigFs {
  /** File content, or undefined when nothing exists at that path. */
  readText(absPath: string): Promise<string | undefined>
  realpath(absPath: string): Promise<string>
  isDirectory(absPath: string): Promise<boolean>
}

export const nodeGymConfigFs: GymConfigFs = {
  readText: async (absPath) => {
    try {
      return await readInputText(absPath, {what: 'the Gym config', maxBytes: INPUT_LIMITS.gymConfig, strictText: true, hint: 'Gym configs are YAML text files of a few kilobytes; point at the config itself.'})
    } catch (error) {
      if (codeOf(error) === 'ENOTDIR' || codeOf(error) === 'EISDIR') return undefined
      if (isGymError(error) && error.details?.kind === 'directory') return undefined
      throw error
    }
  },
  realpath: (absPath) => fsp.realpath(absPath),
  isDirectory: async (absPath) => {
    try {
      return (await fsp.stat(absPath)).isDirectory()
    } catch {
      return false
    }
  },
}

export interface GymRoot {
  /** As given, made absolute. */
  lexical: string
  /** Symlinks resolved: containment is checked against this. */
  real: string
}

export interface ResolvedEntry {
  /** The entry as written in config_paths or on the command line. */
  raw: string
  /** Relative to the Gym root, POSIX separators, normalized. */
  rel: string
  abs: string
}

/** An optional --gym-root given to a command: refused (exit 2) unless it is a directory, before anything runs. */
export async function assertGymRoot(gymRoot: string | undefined): Promise<void> {
  if (gymRoot !== undefined) await resolveGymRoot(gymRoot, nodeGymConfigFs)
}

export async function resolveGymRoot(gymRoot: string, fs: GymConfigFs): Promise<GymRoot> {
  const lexical = path.resolve(gymRoot)
  if (!(await fs.isDirectory(lexical))) {
    throw gymConfigError('gym-root', `the Gym root ${lexical} is not a directory`, {}, 'Point --gym-root (or GYMRECIPE_GYM_ROOT) at a checkout of NVIDIA-NeMo/Gym.')
  }
  return {lexical, real: await fs.realpath(lexical)}
}

/**
 * Resolve a config path against the Gym root. Relative paths are relative to the root; absolute
 * ones must point inside it. Anything that leaves the root (`..`, an outside absolute path) is refused.
 */
export function resolveEntry(root: GymRoot, raw: unknown, origin: SourceLocation & {what: string}): ResolvedEntry {
  if (typeof raw !== 'string' || raw.trim() === '') {
    throw gymConfigError('config-paths', `${origin.what} must be a non-empty path string, got ${JSON.stringify(raw)}`, origin)
  }
  const base = [root.lexical, root.real].find((candidate) => path.isAbsolute(raw) && isInside(candidate, raw)) ?? root.lexical
  const abs = path.isAbsolute(raw) ? path.normalize(raw) : path.resolve(root.lexical, raw)
  if (!isInside(base, abs)) {
    throw gymConfigError(
      'outside-root',
      `${origin.what} '${raw}' points outside the Gym root ${root.lexical}`,
      origin,
      'Config paths are resolved against --gym-root and must stay inside it.',
    )
  }
  const rel = path.relative(base, abs).split(path.sep).join('/')
  return {raw, rel, abs: path.join(root.real, rel)}
}

/** A symlink inside the root may still lead out of it; the resolved target must stay inside. */
export async function assertRealPathInside(root: GymRoot, entry: ResolvedEntry, fs: GymConfigFs, origin: SourceLocation & {what: string}): Promise<void> {
  const real = await fs.realpath(entry.abs)
  if (!isInside(root.real, real)) {
    throw gymConfigError('outside-root', `${origin.what} '${entry.raw}' resolves (through a symlink) to ${real}, outside the Gym root ${root.real}`, origin)
  }
}

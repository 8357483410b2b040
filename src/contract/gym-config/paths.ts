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
  /**
   * Trees outside the checkout that hold the user's own configs and servers, searched before the
   * Gym root as Gym searches NEMO_GYM_EXTRA_ROOTS. A path in one is written `${NAME}/…`.
   */
  extra: ExtraRoot[]
}

export interface ExtraRoot {
  /** The variable that names the tree in recipes and scripts (e.g. RELAX_INTEGRATION_ROOT). */
  name: string
  lexical: string
  real: string
}

export const EXTRA_ROOT_NAME = /^[A-Z][A-Z0-9_]{0,63}$/
const EXTRA_ROOT_ENTRY = /^\$\{([A-Z][A-Z0-9_]{0,63})\}\/(.+)$/

/** The config root a path is written under (`${NAME}/…` → NAME), if it is. */
export function configRootName(entry: string): string | undefined {
  return entry.match(EXTRA_ROOT_ENTRY)?.[1]
}

/** A path under a config root split into the root's name and the path inside it (`${NAME}/a/b` → NAME, a/b). */
export function splitConfigRootPath(entry: string): {name: string; inside: string} | undefined {
  const m = entry.match(EXTRA_ROOT_ENTRY)
  return m ? {name: m[1], inside: m[2]} : undefined
}

/** A path inside a config root as recipes record it: `${NAME}/…`, POSIX separators, never the machine path. */
export function configRootPath(name: string, inside: string): string {
  return `\${${name}}/${inside.split(path.sep).join('/')}`
}

export interface ResolvedEntry {
  /** The entry as written in config_paths or on the command line. */
  raw: string
  /** Relative to the Gym root, POSIX separators, normalized; `${NAME}/…` in an extra root. */
  rel: string
  abs: string
  /** The extra root it lies in, if not the Gym root. */
  root?: ExtraRoot
}

/** An optional --gym-root given to a command: refused (exit 2) unless it is a directory, before anything runs. */
export async function assertGymRoot(gymRoot: string | undefined): Promise<void> {
  if (gymRoot !== undefined) await resolveGymRoot(gymRoot, nodeGymConfigFs)
}

export async function resolveGymRoot(gymRoot: string, fs: GymConfigFs, extraRoots: Array<{name: string; dir: string}> = []): Promise<GymRoot> {
  const lexical = path.resolve(gymRoot)
  if (!(await fs.isDirectory(lexical))) {
    throw gymConfigError('gym-root', `the Gym root ${lexical} is not a directory`, {}, 'Point --gym-root (or GYMRECIPE_GYM_ROOT) at a checkout of NVIDIA-NeMo/Gym.')
  }
  const extra: ExtraRoot[] = []
  for (const {name, dir} of extraRoots) {
    if (!EXTRA_ROOT_NAME.test(name)) throw gymConfigError('gym-root', `config root name ${JSON.stringify(name)} is not a variable name`, {}, 'Name it like an environment variable: capitals, digits and _, e.g. RELAX_INTEGRATION_ROOT=/path/to/tree.')
    const dirLexical = path.resolve(dir)
    if (!(await fs.isDirectory(dirLexical))) throw gymConfigError('gym-root', `config root ${name}=${dirLexical} is not a directory`, {}, 'Point it at the tree that holds your configs (and resources_servers/).')
    extra.push({name, lexical: dirLexical, real: await fs.realpath(dirLexical)})
  }
  return {lexical, real: await fs.realpath(lexical), extra}
}

/** `${NAME}/rel` for a path inside one of the extra roots (absolute or already written that way). */
function extraEntry(root: GymRoot, raw: string): {extra: ExtraRoot; rel: string} | undefined {
  const named = raw.match(EXTRA_ROOT_ENTRY)
  if (named) {
    const extra = root.extra.find((e) => e.name === named[1])
    return extra ? {extra, rel: path.posix.normalize(named[2])} : undefined
  }
  if (!path.isAbsolute(raw)) return undefined
  for (const extra of root.extra) {
    for (const base of [extra.lexical, extra.real]) {
      if (isInside(base, raw)) return {extra, rel: path.relative(base, path.normalize(raw)).split(path.sep).join('/')}
    }
  }
  return undefined
}

/** A relative include as Gym finds it: in the first extra root that has it, else in the Gym root. */
export async function locateEntry(root: GymRoot, raw: unknown, fs: GymConfigFs, origin: SourceLocation & {what: string}): Promise<ResolvedEntry> {
  if (typeof raw === 'string' && raw.trim() !== '' && !path.isAbsolute(raw) && !raw.startsWith('${') && !path.normalize(raw).startsWith('..')) {
    for (const extra of root.extra) {
      if ((await fs.readText(path.join(extra.real, raw)).catch(() => undefined)) !== undefined) return resolveEntry(root, `\${${extra.name}}/${raw}`, origin)
    }
  }
  return resolveEntry(root, raw, origin)
}

/**
 * Resolve a config path against the Gym root. Relative paths are relative to the root; absolute
 * ones must point inside it. Anything that leaves the root (`..`, an outside absolute path) is refused.
 */
export function resolveEntry(root: GymRoot, raw: unknown, origin: SourceLocation & {what: string}): ResolvedEntry {
  if (typeof raw !== 'string' || raw.trim() === '') {
    throw gymConfigError('config-paths', `${origin.what} must be a non-empty path string, got ${JSON.stringify(raw)}`, origin)
  }
  const inExtra = extraEntry(root, raw)
  if (inExtra) {
    if (inExtra.rel === '..' || inExtra.rel.startsWith('../') || path.posix.isAbsolute(inExtra.rel)) {
      throw gymConfigError('outside-root', `${origin.what} '${raw}' leaves the config root ${inExtra.extra.name} (${inExtra.extra.lexical})`, origin)
    }
    return {raw, rel: `\${${inExtra.extra.name}}/${inExtra.rel}`, abs: path.join(inExtra.extra.real, inExtra.rel), root: inExtra.extra}
  }
  if (raw.startsWith('${')) {
    throw gymConfigError('outside-root', `${origin.what} '${raw}' names a config root that was not given`, origin, `Name it with --config-root ${raw.slice(2, raw.indexOf('}'))}=<directory>.`)
  }
  const base = [root.lexical, root.real].find((candidate) => path.isAbsolute(raw) && isInside(candidate, raw)) ?? root.lexical
  const abs = path.isAbsolute(raw) ? path.normalize(raw) : path.resolve(root.lexical, raw)
  if (!isInside(base, abs)) {
    throw gymConfigError(
      'outside-root',
      `${origin.what} '${raw}' points outside the Gym root ${root.lexical}`,
      origin,
      path.isAbsolute(raw)
        ? `A config of your own outside the Gym checkout needs its tree named: --config-root MY_ENV_ROOT=${suggestedRoot(raw)} (the variable env.sh and the start script then use; the tree is mounted read-only into the Gym container).`
        : 'Config paths are resolved against --gym-root and must stay inside it.',
    )
  }
  const rel = path.relative(base, abs).split(path.sep).join('/')
  return {raw, rel, abs: path.join(root.real, rel)}
}

/** The tree a config of the user's own most likely belongs to: above its configs/ folder. */
function suggestedRoot(file: string): string {
  const dir = path.dirname(path.normalize(file))
  return path.basename(dir) === 'configs' ? path.dirname(dir) : dir
}

/** A symlink inside the root may still lead out of it; the resolved target must stay inside. */
export async function assertRealPathInside(root: GymRoot, entry: ResolvedEntry, fs: GymConfigFs, origin: SourceLocation & {what: string}): Promise<void> {
  const real = await fs.realpath(entry.abs)
  const within = entry.root ?? root
  if (!isInside(within.real, real)) {
    throw gymConfigError('outside-root', `${origin.what} '${entry.raw}' resolves (through a symlink) to ${real}, outside ${entry.root ? `the config root ${entry.root.name}` : 'the Gym root'} ${within.real}`, origin)
  }
}

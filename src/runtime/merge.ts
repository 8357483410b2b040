/**
 * Three-way text merge by `git merge-file`: the user's version, the version gymrecipe last
 * generated (the base) and the version generated now. Changes on one side only are taken;
 * the same lines changed on both sides become a conflict with markers.
 */
import {promises as fsp} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {preconditionError} from '../errors.js'
import {run, which} from './process.js'

export interface MergeResult {
  text: string
  /** Conflicting hunks; 0 is a clean merge. */
  conflicts: number
}

export const MERGE_LABELS = {ours: 'yours', base: 'last generated', theirs: 'generated now'} as const

export async function mergeThreeWay(ours: string, base: string, theirs: string, env: NodeJS.ProcessEnv = process.env): Promise<MergeResult> {
  const git = await which('git', env.PATH ?? process.env.PATH)
  if (!git) throw preconditionError('E_NO_GIT', 'git is not on PATH; `new --update` merges with `git merge-file`', 'Install git (e.g. apt-get install git), then rerun.')
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'gymrecipe-merge-'))
  try {
    const [o, b, t] = ['ours', 'base', 'theirs'].map((n) => path.join(dir, n))
    await Promise.all([fsp.writeFile(o, ours), fsp.writeFile(b, base), fsp.writeFile(t, theirs)])
    const r = await run(git, ['merge-file', '-p', '-L', MERGE_LABELS.ours, '-L', MERGE_LABELS.base, '-L', MERGE_LABELS.theirs, o, b, t], {stripFinalNewline: false, env: {LC_ALL: 'C'}, timeout: 60_000})
    // The exit status is the number of conflicts (capped at 127); above that, git failed.
    if (r.exitCode === undefined || r.exitCode > 127) throw preconditionError('E_MERGE_FAILED', `git merge-file failed: ${r.stderr.trim() || `exit ${r.exitCode ?? r.signal}`}`, 'Check that git works (git --version), then rerun.')
    return {text: r.stdout, conflicts: r.exitCode === 0 ? 0 : countConflicts(r.stdout)}
  } finally {
    await fsp.rm(dir, {recursive: true, force: true})
  }
}

function countConflicts(text: string): number {
  return text.split('\n').filter((l) => l.startsWith(`<<<<<<< ${MERGE_LABELS.ours}`)).length
}

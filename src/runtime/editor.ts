/** Let the user edit a text in $VISUAL / $EDITOR (run by sh, so `code -w` works), on this terminal. */
import {promises as fsp} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {preconditionError} from '../errors.js'

export function editorOf(env: NodeJS.ProcessEnv): string | undefined {
  return env.VISUAL?.trim() || env.EDITOR?.trim() || undefined
}

/** The text after the editor exits; an editor that fails leaves nothing changed (and says so). */
export async function editText(initial: string, env: NodeJS.ProcessEnv, fileName = 'draft.txt'): Promise<string> {
  const editor = editorOf(env)
  if (!editor) throw preconditionError('E_NO_EDITOR', 'neither VISUAL nor EDITOR is set', 'Set EDITOR (e.g. EDITOR=nano), or accept the draft with --yes.')
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'gymrecipe-edit-'))
  const file = path.join(dir, fileName)
  try {
    await fsp.writeFile(file, initial, {mode: 0o600})
    const {execa} = await import('execa')
    const result = await execa('sh', ['-c', `${editor} "$1"`, 'sh', file], {stdio: 'inherit', env, reject: false})
    if (result.exitCode !== 0) throw preconditionError('E_EDITOR_FAILED', `the editor (${editor}) exited with status ${result.exitCode ?? result.signal}; nothing was recorded`, 'Rerun, or accept the draft with --yes.')
    return await fsp.readFile(file, 'utf8')
  } finally {
    await fsp.rm(dir, {recursive: true, force: true})
  }
}

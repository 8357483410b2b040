/**
 * A secret written into a recipe file never travels on: not to the terminal, not to the ladder
 * state, not into PITFAIL.md (which is committed) when a failure is drafted into an entry.
 */
import {mkdtemp, readdir, readFile, rm} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'

import {runCli} from '../helpers/cli.js'
import {editFile, generatedRecipe} from '../helpers/recipes.js'

const roots: string[] = []
afterAll(async () => {
  for (const root of roots) await rm(root, {recursive: true, force: true})
})

async function allText(dir: string): Promise<string> {
  const parts: string[] = []
  for (const entry of await readdir(dir, {recursive: true, withFileTypes: true})) {
    if (entry.isFile()) parts.push(await readFile(path.join(entry.parentPath, entry.name), 'utf8'))
  }
  return parts.join('\n')
}

describe('an inline credential in env.sh', () => {
  it('is redacted on screen and in the ladder state, and a drafted pitfall leaves its line out', async () => {
    const token = 'sekr3tInlineBearer'
    const {relaxRoot, dir} = await generatedRecipe('calendar', 'inline-secret')
    const state = await mkdtemp(path.join(os.tmpdir(), 'gr-state-'))
    roots.push(relaxRoot, state)
    await editFile(dir, 'env.sh', (t) => `${t}curl -H "Authorization: Bearer ${token}" http://example.invalid\n`)
    const env = {XDG_STATE_HOME: state, DOCKER_HOST: 'unix:///nonexistent'}

    const verify = await runCli(['verify', 'inline-secret', '--relax-root', relaxRoot], {env})
    expect(verify.exitCode).toBe(4)
    expect(verify.stdout).toMatch(/✖ env\.sh holds deployment values only: .*Authorization: Bearer <redacted>/)
    expect(`${verify.stdout}${verify.stderr}`).not.toContain(token)
    expect(await allText(state)).not.toContain(token)

    const draft = await runCli(['pitfall', 'add', 'inline-secret', '--relax-root', relaxRoot, '--from-last-failure', '--yes'], {env})
    expect(draft.exitCode, draft.stderr).toBe(0)
    expect(`${draft.stdout}${draft.stderr}`).not.toContain(token)
    const pitfail = await readFile(path.join(dir, 'PITFAIL.md'), 'utf8')
    expect(pitfail).not.toContain(token)
    const entry = pitfail.split('\n').filter((l) => l.includes('env.sh holds deployment values only')).join('\n')
    expect(entry).toMatch(/not copied: the line holds a credential/)
    expect(entry).not.toContain('Bearer')
  })
})

import {execa} from 'execa'
import {mkdir, mkdtemp, readFile, stat, symlink, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {repoRoot} from '../helpers/cli.js'

const demo = path.join(repoRoot, 'scripts', 'demo.sh')

/** The README's quick start, as `npm run demo` runs it after the build. */
function runDemo(root: string) {
  return execa('bash', [demo], {reject: false, cwd: repoRoot, env: {NO_COLOR: '1', GYMRECIPE_DEMO_ROOT: root}, timeout: 120_000})
}

describe('npm run demo (scripts/demo.sh)', () => {
  it('generates the Calendar recipe into a scratch Relax checkout and passes the whole static rung', async () => {
    const root = path.join(await mkdtemp(path.join(os.tmpdir(), 'gr-demo-')), 'relax')
    const first = await runDemo(root)
    expect(first.exitCode, first.stderr).toBe(0)
    expect(first.stdout).toMatch(/^✔ static rung: pass$/m)
    expect(first.stdout).not.toMatch(/not checked/)
    const recipe = path.join(root, 'examples/nemo_gym_agentic/recipes/calendar')
    expect((await stat(path.join(recipe, 'recipe.yaml'))).isFile()).toBe(true)
    expect((await stat(path.join(root, 'scripts/models/qwen3-4B.sh'))).isFile()).toBe(true)

    // Run again: its own earlier scratch checkout is replaced, not added to.
    await writeFile(path.join(recipe, 'left-over.txt'), 'from the first run\n')
    const second = await runDemo(root)
    expect(second.exitCode, second.stderr).toBe(0)
    await expect(stat(path.join(recipe, 'left-over.txt'))).rejects.toMatchObject({code: 'ENOENT'})
  })

  it('leaves a folder it did not make alone and says so', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'gr-demo-foreign-'))
    await writeFile(path.join(root, 'precious.txt'), 'mine\n')
    const result = await runDemo(root)
    expect(result.exitCode).toBe(2)
    expect(result.stderr).toContain(`${root} exists and was not made by this demo`)
    expect(await readFile(path.join(root, 'precious.txt'), 'utf8')).toBe('mine\n')
  })

  it('never follows a link to an earlier demo folder', async () => {
    const base = await mkdtemp(path.join(os.tmpdir(), 'gr-demo-link-'))
    const target = path.join(base, 'target')
    await mkdir(target)
    await writeFile(path.join(target, '.gymrecipe-demo'), 'looks like a demo\n')
    await writeFile(path.join(target, 'precious.txt'), 'mine\n')
    const link = path.join(base, 'link')
    await symlink(target, link)
    const result = await runDemo(link)
    expect(result.exitCode).toBe(2)
    expect(await readFile(path.join(target, 'precious.txt'), 'utf8')).toBe('mine\n')
  })
})

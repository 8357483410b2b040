/**
 * The README's first command: `npm run demo` runs scripts/demo.ts after the build. It makes a
 * scratch Relax checkout and climbs the whole ladder on the emulated stack (static only without
 * Docker); a folder it did not make is never touched.
 */
import {execa} from 'execa'
import {mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {repoRoot} from '../helpers/cli.js'
import {dockerUnavailableReason} from '../helpers/docker.js'

const demo = path.join(repoRoot, 'scripts', 'demo.ts')
const unavailable = await dockerUnavailableReason()
if (unavailable) console.error(`\n!! SKIPPING the full-ladder demo run: ${unavailable}\n`)

function runDemo(root: string) {
  return execa('node', ['--import', 'tsx', demo], {reject: false, cwd: repoRoot, env: {NO_COLOR: '1', GYMRECIPE_DEMO_ROOT: root}, timeout: 900_000})
}

describe('npm run demo (scripts/demo.ts)', () => {
  it.skipIf(Boolean(unavailable))('climbs every rung, static to training, on the emulated stack, and stops what it started', async () => {
    const base = await mkdtemp(path.join(os.tmpdir(), 'gr-demo-'))
    const root = path.join(base, 'relax')
    try {
      const first = await runDemo(root)
      expect(first.exitCode, first.stderr + first.stdout.slice(-3000)).toBe(0)
      for (const rung of ['static', 'data', 'service', 'network', 'trial', 'training']) expect(first.stdout).toMatch(new RegExp(`^✔ ${rung} rung: pass$`, 'm'))
      expect(first.stdout).toContain('demo-workplace: every rung up to training passed')
      expect(first.stdout).toMatch(/^demo: every rung passed on the emulated stack/m)
      const recipe = path.join(root, 'examples/nemo_gym_agentic/recipes/demo-workplace')
      expect((await stat(path.join(recipe, 'recipe.yaml'))).isFile()).toBe(true)
      // Nothing left running or labelled: the container and image are removed by their label.
      const left = await execa('docker', ['ps', '-a', '-q', '--filter', 'label=ai.relax.recipe=demo-workplace'])
      expect(left.stdout.trim()).toBe('')

      // Run again: its own earlier scratch checkout is replaced, not added to.
      await writeFile(path.join(recipe, 'left-over.txt'), 'from the first run\n')
      const second = await runDemo(root)
      expect(second.exitCode, second.stderr).toBe(0)
      await expect(stat(path.join(recipe, 'left-over.txt'))).rejects.toMatchObject({code: 'ENOENT'})
    } finally {
      await rm(base, {recursive: true, force: true})
    }
  }, 1_800_000)

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

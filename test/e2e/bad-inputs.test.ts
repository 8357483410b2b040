/**
 * Hostile inputs get a one-line error naming the file, a stable code and the documented exit
 * status, and nothing is written: a YAML alias bomb in every YAML a command reads.
 */
import {mkdtemp, readdir, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {beforeAll, describe, expect, it} from 'vitest'

import {repoRoot, runCli, snapshotRoot} from '../helpers/cli.js'
import {generatedRecipe} from '../helpers/recipes.js'

// Nine aliases per level, seven levels: millions of nodes from a few hundred bytes.
const BOMB = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]', ...'bcdefg'.split('').map((k, i) => `${k}: &${k} [${Array(9).fill(`*${'abcdefg'[i]}`).join(',')}]`)].join('\n')

describe('a YAML alias bomb', () => {
  let dir: string
  let bomb: string
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'gr-bad-'))
    bomb = path.join(dir, 'bomb.yaml')
    await writeFile(bomb, `${BOMB}\nverifier: *g\n`)
  })

  const cases: Array<[string, () => string[]]> = [
    ['tasks build --spec', () => ['tasks', 'build', path.join(repoRoot, 'test/fixtures/tasks/seed-rows.jsonl'), '--spec', bomb, '-o', path.join(dir, 'out.jsonl')]],
    ['call resource --config', () => ['call', 'resource', path.join(repoRoot, 'test/fixtures/tasks/seed-rows.jsonl'), '--config', bomb, '-o', path.join(dir, 'out.jsonl'), '-e', path.join(dir, 'evidence')]],
    ['new --verifier', () => ['new', 'bomb', '--gym-root', snapshotRoot, '--gym-config', 'environments/calendar/config.yaml', '--relax-root', dir, '--verifier', bomb]],
    ['inspect --gym-config', () => ['inspect', '--gym-root', dir, '--gym-config', 'bomb.yaml']],
  ]

  it.each(cases)('%s: exit 2, E_YAML_ALIASES naming the file, nothing written', async (_what, args) => {
    const r = await runCli([...args(), '--json'])
    expect(r.exitCode).toBe(2)
    expect(r.json.error).toMatchObject({code: 'E_YAML_ALIASES', exit: 2, location: {file: expect.stringMatching(/bomb\.yaml$/)}})
    expect(r.json.error.message).toMatch(/^YAML aliases expand too far/)
    const text = await runCli(args())
    expect(text.exitCode).toBe(2)
    expect(text.stderr).toContain('YAML aliases expand too far')
    expect(text.stderr).not.toContain('ReferenceError')
    expect((await readdir(dir)).sort()).toEqual(['bomb.yaml'])
  })

  it('recipe.yaml: verify exits 2 naming it', async () => {
    const {relaxRoot, dir: recipeDir} = await generatedRecipe('calendar')
    await writeFile(path.join(recipeDir, 'recipe.yaml'), `${BOMB}\nid: *g\n`)
    const r = await runCli(['verify', 'calendar', '--relax-root', relaxRoot, '--json'])
    expect(r.exitCode).toBe(2)
    expect(r.json.error).toMatchObject({code: 'E_YAML_ALIASES', location: {file: path.join(recipeDir, 'recipe.yaml')}})
  })
})

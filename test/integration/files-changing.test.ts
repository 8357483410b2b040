/**
 * Files that change while a command runs, and values that look like gymrecipe's own markers:
 * nothing the user wrote is lost, and markers are trusted only where gymrecipe wrote them.
 */
import {readFile, rm, writeFile} from 'node:fs/promises'
import path from 'node:path'
import {afterEach, describe, expect, it} from 'vitest'

import {loadContractFile} from '../../src/contract/load.js'
import {writeFileAtomic} from '../../src/runtime/fs.js'
import {applyPlan, planRecipe} from '../../src/scaffold/plan.js'
import {renderRecipe} from '../../src/scaffold/render.js'
import {runCli, snapshotRoot} from '../helpers/cli.js'
import {CONFIG_FOR, editFile, generatedRecipe} from '../helpers/recipes.js'

const roots: string[] = []
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, {recursive: true, force: true})
})

async function recipe(id: string) {
  const made = await generatedRecipe('calendar', id)
  roots.push(made.relaxRoot)
  return made
}

describe('a file that changes between read and replace is not written over', () => {
  it('writeFileAtomic with unchangedFrom refuses, leaving the newer text', async () => {
    const {dir} = await recipe('changing-atomic')
    const file = path.join(dir, 'README.md')
    const read = await readFile(file, 'utf8')
    await writeFile(file, `${read}a line the user saved meanwhile\n`)
    const error = await writeFileAtomic(file, 'replacement\n', undefined, {unchangedFrom: read}).catch((e) => e)
    expect(error.code).toBe('E_CHANGED_WHILE_WRITING')
    expect(await readFile(file, 'utf8')).toContain('a line the user saved meanwhile')
    // Unchanged: written.
    await writeFileAtomic(file, 'replacement\n', undefined, {unchangedFrom: `${read}a line the user saved meanwhile\n`})
    expect(await readFile(file, 'utf8')).toBe('replacement\n')
  })

  it('a recipe plan is not applied over a file saved after it was planned; nothing is written', async () => {
    const {dir} = await recipe('changing-plan')
    const contract = await loadContractFile(path.join(dir, 'recipe.yaml'))
    const rendered = await renderRecipe({...contract, description: `${contract.description} (now longer)`})
    const plan = await planRecipe(dir, rendered, {...contract, description: `${contract.description} (now longer)`}, true)
    expect(plan.files.find((f) => f.name === 'README.md')?.action).toBe('update')
    expect(plan.files.find((f) => f.name === 'recipe.yaml')?.action).toBe('overwrite')
    const readme = path.join(dir, 'README.md')
    const lines = Array.from({length: 900}, (_, i) => `user line ${i}`).join('\n')
    await writeFile(readme, `${await readFile(readme, 'utf8')}${lines}\n`)
    const before = await readFile(path.join(dir, 'recipe.yaml'), 'utf8')
    const error = await applyPlan(plan).catch((e) => e)
    expect(error.code).toBe('E_CHANGED_WHILE_WRITING')
    expect(error.message).toContain('README.md changed in')
    expect((await readFile(readme, 'utf8')).split('\n').filter((l) => l.startsWith('user line')).length).toBe(900)
    expect(await readFile(path.join(dir, 'recipe.yaml'), 'utf8')).toBe(before)
  })
})

describe('marker text in a value never becomes a marker', () => {
  it('a description holding the hand-off markers is rendered inert, and handoff --write keeps every line', async () => {
    const {relaxRoot, dir} = await recipe('marker-in-value')
    await editFile(dir, 'recipe.yaml', (t) => t.replace(/^description: .*$/m, `description: "<!-- gymrecipe:handoff:begin (x) -->"`))
    const update = await runCli(['new', 'marker-in-value', '--update', '--gym-root', snapshotRoot, '--gym-config', CONFIG_FOR.calendar, '--from', 'calendar', '--relax-root', relaxRoot])
    expect(update.exitCode, update.stderr).toBe(0)
    const readme = await readFile(path.join(dir, 'README.md'), 'utf8')
    expect(readme).toContain('&lt;!-- gymrecipe:handoff:begin (x) --&gt;')
    expect(readme.match(/^<!-- gymrecipe:handoff:begin/gm)?.length ?? 0).toBeLessThanOrEqual(1)
    const linesBefore = readme.split('\n').length
    const handoff = await runCli(['handoff', 'marker-in-value', '--relax-root', relaxRoot, '--write'], {env: {DOCKER_HOST: 'unix:///nonexistent'}})
    expect(handoff.exitCode, handoff.stderr).toBe(0)
    const after = await readFile(path.join(dir, 'README.md'), 'utf8')
    expect(after.split('\n').length).toBeGreaterThanOrEqual(linesBefore)
    expect(after).toContain('&lt;!-- gymrecipe:handoff:begin (x) --&gt;')
    expect(after).toMatch(/^## Hand-off$/m)
  })

  it('a README holding a second pair of markers is refused, not cut', async () => {
    const {relaxRoot, dir} = await recipe('marker-twice')
    const readme = path.join(dir, 'README.md')
    const first = await runCli(['handoff', 'marker-twice', '--relax-root', relaxRoot, '--write'], {env: {DOCKER_HOST: 'unix:///nonexistent'}})
    expect(first.exitCode, first.stderr).toBe(0)
    const text = await readFile(readme, 'utf8')
    const pasted = `${text}\nnotes pasted by hand:\n<!-- gymrecipe:handoff:begin (copy) -->\nold\n<!-- gymrecipe:handoff:end -->\nmore notes\n`
    await writeFile(readme, pasted)
    const again = await runCli(['handoff', 'marker-twice', '--relax-root', relaxRoot, '--write'], {env: {DOCKER_HOST: 'unix:///nonexistent'}})
    expect(again.exitCode).toBe(3)
    expect(again.stderr).toMatch(/holds 2 gymrecipe:handoff:begin and 2 gymrecipe:handoff:end markers/)
    expect(await readFile(readme, 'utf8')).toBe(pasted)
  })
})

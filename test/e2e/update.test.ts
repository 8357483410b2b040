import {mkdir, readFile, rm, symlink, writeFile} from 'node:fs/promises'
import path from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'
import {parse as parseYaml, stringify as stringifyYaml} from 'yaml'

import {runCli, snapshotRoot} from '../helpers/cli.js'
import {CONFIG_FOR, editFile, generatedRecipe} from '../helpers/recipes.js'

const made: string[] = []
afterAll(() => Promise.all(made.map((d) => rm(d, {recursive: true, force: true}))))

const RUN = 'run-qwen3-4B-8xgpu-nemo-gym-calendar.sh'

async function recipe(): Promise<{relaxRoot: string; dir: string}> {
  const r = await generatedRecipe('calendar')
  made.push(r.relaxRoot)
  return r
}

const update = (relaxRoot: string, ...extra: string[]) => runCli(['new', 'calendar', '--gym-root', snapshotRoot, '--relax-root', relaxRoot, '--update', '--json', ...extra])
const actions = (json: {files: Array<{name: string; action: string}>}) => Object.fromEntries(json.files.map((f) => [f.name, f.action]))
const verifyStatic = (relaxRoot: string) => runCli(['verify', 'calendar', '--level', 'static', '--relax-root', relaxRoot, '--gym-root', snapshotRoot, '--json'])

describe('gymrecipe new --update', () => {
  it('keeps an edited training array and takes a changed port base; the merged recipe passes the static rung', async () => {
    const {relaxRoot, dir} = await recipe()
    await editFile(dir, RUN, (t) => t.replace('--rollout-temperature 0.7', '--rollout-temperature 0.8'))
    const r = await update(relaxRoot, '--port-base', '21000')
    expect(r.exitCode, r.stderr).toBe(0)
    expect(actions(r.json)).toMatchObject({[RUN]: 'merge', 'env.sh': 'update', 'start_calendar_gym.sh': 'update', 'recipe.yaml': 'update'})
    const run = await readFile(path.join(dir, RUN), 'utf8')
    expect(run).toContain('--rollout-temperature 0.8')
    expect(run).toContain('NEMO_GYM_GATEWAY_PORT="${NEMO_GYM_GATEWAY_PORT:-21000}"')
    expect(await readFile(path.join(dir, 'env.sh'), 'utf8')).toContain(':-21000}')
    expect(parseYaml(await readFile(path.join(dir, 'recipe.yaml'), 'utf8')).service.gateway_port).toBe(21000)
    const v = await verifyStatic(relaxRoot)
    expect(v.exitCode, JSON.stringify(v.json?.rungs?.[0]?.checks?.filter((c: {status: string}) => c.status !== 'pass'))).toBe(0)

    // Run again with nothing new: the edit stays, nothing is rewritten, the port is not reverted.
    const again = await update(relaxRoot)
    expect(again.exitCode).toBe(0)
    expect(new Set(Object.values(actions(again.json)))).toEqual(new Set(['unchanged']))
    expect(await readFile(path.join(dir, RUN), 'utf8')).toBe(run)
  })

  it('an edit to recipe.yaml reaches the scripts, next to a changed option', async () => {
    const {relaxRoot, dir} = await recipe()
    const file = path.join(dir, 'recipe.yaml')
    const doc = parseYaml(await readFile(file, 'utf8'))
    doc.training.rollout.temperature = 0.9
    await writeFile(file, stringifyYaml(doc))
    const r = await update(relaxRoot, '--port-base', '23000')
    expect(r.exitCode, r.stderr).toBe(0)
    expect(actions(r.json)['recipe.yaml']).toBe('merge')
    const recorded = parseYaml(await readFile(file, 'utf8'))
    expect(recorded.training.rollout.temperature).toBe(0.9)
    expect(recorded.service.gateway_port).toBe(23000)
    const run = await readFile(path.join(dir, RUN), 'utf8')
    expect(run).toContain('--rollout-temperature 0.9')
    expect(run).toContain(':-23000}')
  })

  it('the same line changed on both sides: written with markers, listed, exit 3; still a conflict until resolved', async () => {
    const {relaxRoot, dir} = await recipe()
    await editFile(dir, RUN, (t) => t.replace(/NEMO_GYM_GATEWAY_PORT="\$\{NEMO_GYM_GATEWAY_PORT:-\d+\}"/, 'NEMO_GYM_GATEWAY_PORT="${NEMO_GYM_GATEWAY_PORT:-25500}"'))
    const dry = await update(relaxRoot, '--port-base', '22000', '--dry-run', '--diff')
    expect(dry.exitCode).toBe(3)
    expect(await readFile(path.join(dir, RUN), 'utf8')).not.toContain('<<<<<<<')
    const text = await runCli(['new', 'calendar', '--gym-root', snapshotRoot, '--relax-root', relaxRoot, '--update', '--port-base', '22000', '--dry-run', '--diff'])
    expect(text.stdout).toMatch(/^\+<<<<<<< yours\n NEMO_GYM_GATEWAY_PORT="\$\{NEMO_GYM_GATEWAY_PORT:-25500\}"\n\+=======\n\+NEMO_GYM_GATEWAY_PORT="\$\{NEMO_GYM_GATEWAY_PORT:-22000\}"\n\+>>>>>>> generated now$/m)
    expect(text.stdout).toContain(`would need you: resolve the conflict markers (<<<<<<< yours … >>>>>>> generated now) in ${RUN}`)

    const r = await update(relaxRoot, '--port-base', '22000')
    expect(r.exitCode).toBe(3)
    expect(r.json.files.find((f: {name: string}) => f.name === RUN)).toMatchObject({action: 'conflict', reason: expect.stringMatching(/^1 conflicting change/)})
    const run = await readFile(path.join(dir, RUN), 'utf8')
    expect(run).toContain('<<<<<<< yours\nNEMO_GYM_GATEWAY_PORT="${NEMO_GYM_GATEWAY_PORT:-25500}"\n=======\nNEMO_GYM_GATEWAY_PORT="${NEMO_GYM_GATEWAY_PORT:-22000}"\n>>>>>>> generated now\n')
    // Clean files were written in the same run.
    expect(await readFile(path.join(dir, 'env.sh'), 'utf8')).toContain(':-22000}')

    const again = await update(relaxRoot, '--port-base', '22000')
    expect(again.exitCode).toBe(3)
    expect(again.json.files.find((f: {name: string}) => f.name === RUN).reason).toContain('conflict markers from an earlier update')
    // The static rung refuses a script with markers in it.
    expect((await verifyStatic(relaxRoot)).exitCode).toBe(4)
  })

  it('a file you deleted stays deleted; deleted and changed since is a conflict and is not restored', async () => {
    const {relaxRoot, dir} = await recipe()
    await rm(path.join(dir, 'prepare_calendar.sh'))
    const same = await update(relaxRoot)
    expect(same.exitCode).toBe(0)
    expect(actions(same.json)['prepare_calendar.sh']).toBe('deleted')

    await rm(path.join(dir, 'env.sh'))
    const changed = await update(relaxRoot, '--port-base', '24000')
    expect(changed.exitCode).toBe(3)
    expect(changed.json.files.find((f: {name: string}) => f.name === 'env.sh')).toMatchObject({action: 'conflict', reason: expect.stringContaining('you deleted it')})
    await expect(readFile(path.join(dir, 'env.sh'))).rejects.toThrow(/ENOENT/)
    await expect(readFile(path.join(dir, 'prepare_calendar.sh'))).rejects.toThrow(/ENOENT/)
  })

  it('without a kept base, every difference is a conflict, and a base that does not match its hash is not trusted', async () => {
    const {relaxRoot, dir} = await recipe()
    await editFile(dir, RUN, (t) => t.replace('--rollout-temperature 0.7', '--rollout-temperature 0.8'))
    await writeFile(path.join(dir, '.gymrecipe', 'last-generated', RUN), 'tampered\n')
    const r = await update(relaxRoot, '--dry-run')
    expect(r.exitCode).toBe(3)
    expect(r.json.notes.join('\n')).toContain(`.gymrecipe/last-generated/${RUN} does not match the hash recorded in recipe.yaml`)
    expect(r.json.files.find((f: {name: string}) => f.name === RUN).reason).toContain('no base kept')

    await rm(path.join(dir, '.gymrecipe'), {recursive: true})
    const none = await update(relaxRoot, '--dry-run')
    expect(none.exitCode).toBe(3)
    expect(actions(none.json)[RUN]).toBe('conflict')
  })

  it('refuses: no recipe.yaml, --update with --force, a linked .gymrecipe, no git on PATH', async () => {
    const {relaxRoot, dir} = await recipe()
    const fresh = await runCli(['new', 'other', '--gym-root', snapshotRoot, '--gym-config', CONFIG_FOR.calendar, '--relax-root', relaxRoot, '--update', '--json'])
    expect(fresh.json.error).toMatchObject({code: 'E_NOTHING_TO_UPDATE', exit: 2})
    expect((await update(relaxRoot, '--force')).exitCode).toBe(2)

    await editFile(dir, RUN, (t) => t.replace('--rollout-temperature 0.7', '--rollout-temperature 0.8'))
    const noGit = await runCli(['new', 'calendar', '--gym-root', snapshotRoot, '--relax-root', relaxRoot, '--update', '--port-base', '21000', '--json'], {env: {PATH: '/nonexistent'}})
    expect(noGit.json.error).toMatchObject({code: 'E_NO_GIT', exit: 3})

    const elsewhere = path.join(relaxRoot, 'elsewhere')
    await mkdir(elsewhere)
    await rm(path.join(dir, '.gymrecipe'), {recursive: true})
    await symlink(elsewhere, path.join(dir, '.gymrecipe'))
    const linked = await runCli(['new', 'calendar', '--gym-root', snapshotRoot, '--gym-config', CONFIG_FOR.calendar, '--relax-root', relaxRoot, '--force', '--json'])
    expect(linked.json.error).toMatchObject({code: 'E_RECIPE_DIR_LINK', exit: 2})
  })
})

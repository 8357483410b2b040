import {chmod, mkdir, mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeEach, describe, expect, it} from 'vitest'

import {runCli, snapshotRoot} from '../helpers/cli.js'
import {CONFIG_FOR, editFile, generatedRecipe} from '../helpers/recipes.js'

const made: string[] = []
afterAll(() => Promise.all(made.map((d) => rm(d, {recursive: true, force: true}))))

async function temp(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix))
  made.push(dir)
  return dir
}

let state: string
beforeEach(async () => {
  state = await temp('gr-state-')
})

/** The CLI with this test's own state directory and no Docker. */
const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, {env: {XDG_STATE_HOME: state, DOCKER_HOST: 'unix:///nonexistent/docker.sock', ...env}})

async function recipe(): Promise<{relaxRoot: string; dir: string}> {
  const r = await generatedRecipe('calendar')
  made.push(r.relaxRoot)
  return r
}

const regenerate = (relaxRoot: string, ...extra: string[]) => cli(['new', 'calendar', '--from', 'calendar', '--gym-root', snapshotRoot, '--gym-config', CONFIG_FOR.calendar, '--relax-root', relaxRoot, ...extra])

describe('gymrecipe handoff', () => {
  it('gives the three bare commands, the env they stop on, the data and checkpoint paths, and every unpassed rung', async () => {
    const {relaxRoot, dir} = await recipe()
    await mkdir(path.join(relaxRoot, 'scripts', 'entrypoint'), {recursive: true})
    await writeFile(path.join(relaxRoot, 'scripts', 'entrypoint', 'ray-job.sh'), '#!/bin/bash\n')
    const r = await cli(['handoff', 'calendar', '--relax-root', relaxRoot, '--json'], {GYM_HOST: '', EXP_DIR: '/shared/exp/cal', NEMO_GYM_SOURCE_DATA: '/shared/data/calendar_train.jsonl'})
    expect(r.exitCode, r.stderr).toBe(0)
    const rel = 'examples/nemo_gym_agentic/recipes/calendar'
    expect(r.json.commands.map((c: {shell: string}) => c.shell)).toEqual([
      `bash ${rel}/prepare_calendar.sh`,
      `bash ${rel}/start_calendar_gym.sh`,
      `bash scripts/entrypoint/ray-job.sh ${rel}/run-qwen3-4B-8xgpu-nemo-gym-calendar.sh`,
    ])
    expect(r.json.commands.every((c: {note: string | null}) => c.note === null)).toBe(true)
    expect(r.json.env.file).toBe(path.join(dir, 'env.sh'))
    expect(r.json.env.required.filter((v: {set: boolean}) => !v.set).map((v: {name: string}) => v.name)).toEqual(['GYM_HOST'])
    expect(r.json.data).toEqual({path: '/shared/data/calendar_train.jsonl', exists: false})
    expect(r.json.checkpoints).toBe('/shared/exp/cal/Qwen3-4B_mcore_8xgpu/')
    expect(r.json.unverified.map((u: {rung: string; status: string}) => `${u.rung}:${u.status}`)).toEqual(['static:never', 'data:never', 'service:never', 'network:never', 'trial:never', 'training:never'])
    expect(r.json.unverified[1].command).toBe(`gymrecipe verify calendar --level data --relax-root ${relaxRoot}`)

    const text = await cli(['handoff', 'calendar', '--relax-root', relaxRoot], {GYM_HOST: ''})
    expect(text.stdout).toContain(`calendar hand-off: run from ${relaxRoot}, after filling in ${rel}/env.sh`)
    expect(text.stdout).toMatch(/env they read: .*GYM_HOST.*; still unset: GYM_HOST/)
    expect(text.stdout).toMatch(/^ {2}static {3}never checked$/m)
  })

  it('after a static climb: static passed; after a script edit: stale, with the command that re-checks it', async () => {
    const {relaxRoot, dir} = await recipe()
    const v = await cli(['verify', 'calendar', '--level', 'static', '--relax-root', relaxRoot])
    expect(v.exitCode, v.stdout).toBe(0)
    let h = await cli(['handoff', 'calendar', '--relax-root', relaxRoot, '--json'])
    expect(h.json.rungs[0]).toMatchObject({rung: 'static', status: 'passed'})
    expect(h.json.unverified.map((u: {rung: string}) => u.rung)).not.toContain('static')
    const status = await cli(['status', 'calendar', '--relax-root', relaxRoot])
    expect(status.stdout).toMatch(/^ {2}ladder {5}static passed, data never checked, service never checked, network never checked, trial never checked, training never checked$/m)
    await editFile(dir, 'prepare_calendar.sh', (t) => `${t}\n# edited\n`)
    expect((await cli(['status', 'calendar', '--relax-root', relaxRoot, '--json'])).json.ladder[0]).toMatchObject({rung: 'static', status: 'stale', reason: 'the recipe files changed since it passed'})
    h = await cli(['handoff', 'calendar', '--relax-root', relaxRoot])
    expect(h.stdout).toMatch(/^ {2}static {3}stale: the recipe files changed since it passed \(.+\)\n {11}gymrecipe verify calendar --level static --relax-root /m)
  })

  it('--write fills the README hand-off section, which regeneration keeps and does not count as an edit', async () => {
    const {relaxRoot, dir} = await recipe()
    const readme = path.join(dir, 'README.md')
    const dry = await cli(['handoff', 'calendar', '--relax-root', relaxRoot, '--write', '--dry-run'])
    expect(dry.exitCode).toBe(0)
    expect(await readFile(readme, 'utf8')).toContain('Not recorded yet')
    const w = await cli(['handoff', 'calendar', '--relax-root', relaxRoot, '--write'], {HF_TOKEN: 'hf_Planted_secret_77x', NEMO_GYM_SOURCE_DATA: '/data/hf_Planted_secret_77x/calendar_train.jsonl'})
    expect(w.exitCode, w.stderr).toBe(0)
    const written = await readFile(readme, 'utf8')
    expect(written).toContain('bash examples/nemo_gym_agentic/recipes/calendar/start_calendar_gym.sh')
    expect(written).toMatch(/- training: never checked; check with `gymrecipe verify calendar --level training/)
    expect(written).not.toContain('Not recorded yet')
    expect(written).not.toContain('hf_Planted_secret_77x')
    expect(w.stdout).not.toContain('hf_Planted_secret_77x')

    const again = await regenerate(relaxRoot, '--json')
    expect(again.exitCode, again.stderr).toBe(0)
    expect(again.json.files.find((f: {name: string}) => f.name === 'README.md').action).toBe('unchanged')
    expect(await readFile(readme, 'utf8')).toBe(written)
  })

  it('refuses --dry-run without --write, and an unknown recipe', async () => {
    const {relaxRoot} = await recipe()
    expect((await cli(['handoff', 'calendar', '--relax-root', relaxRoot, '--dry-run'])).exitCode).toBe(2)
    const r = await cli(['handoff', 'nope', '--relax-root', relaxRoot, '--json'])
    expect(r.json.error).toMatchObject({code: 'E_RECIPE_NOT_FOUND', exit: 2})
  })
})

describe('gymrecipe pitfall add', () => {
  const add = (relaxRoot: string, ...extra: string[]) => cli(['pitfall', 'add', 'calendar', '--relax-root', relaxRoot, ...extra])

  it('appends one numbered entry after the generated ones, keeps it across regeneration, and refuses the same symptom', async () => {
    const {relaxRoot, dir} = await recipe()
    const file = path.join(dir, 'PITFAIL.md')
    const generatedEntries = (await readFile(file, 'utf8')).match(/^\d+\. \*\*/gm)!.length
    const r = await add(relaxRoot, '--symptom', 'Gateway answers 502 on every trial', '--cause', 'the agent port collided with a Jupyter server', '--fix', 'move the block with new --port-base', '--json')
    expect(r.exitCode, r.stderr).toBe(0)
    expect(r.json.number).toBe(generatedEntries + 1)
    expect(r.json.line).toBe(`${generatedEntries + 1}. **Gateway answers 502 on every trial.** → the agent port collided with a Jupyter server. → move the block with new --port-base.`)
    const text = await readFile(file, 'utf8')
    const region = text.slice(text.indexOf('<!-- gymrecipe:recorded-pitfalls:begin'), text.indexOf('<!-- gymrecipe:recorded-pitfalls:end'))
    expect(region).toContain(r.json.line)

    const second = await add(relaxRoot, '--symptom', 'Rollouts hang at turn 2', '--cause', 'a proxy held the callback', '--fix', 'add the Relax host to NO_PROXY')
    expect(second.exitCode).toBe(0)
    expect(second.stdout).toContain(`recorded entry ${generatedEntries + 2} in ${file}`)

    const dup = await add(relaxRoot, '--symptom', 'gateway answers `502` on every trial!', '--cause', 'x', '--fix', 'y', '--json')
    expect(dup.json.error).toMatchObject({code: 'E_PITFALL_DUPLICATE', exit: 3, location: {file, line: expect.any(Number)}})
    expect(dup.json.error.message).toBe(`this symptom is already entry ${generatedEntries + 1}: Gateway answers 502 on every trial.`)

    const before = await readFile(file, 'utf8')
    const again = await regenerate(relaxRoot, '--json')
    expect(again.json.files.find((f: {name: string}) => f.name === 'PITFAIL.md').action).toBe('unchanged')
    expect(await readFile(file, 'utf8')).toBe(before)
  })

  it('refuses parts that are empty, several lines, too long or would break the recorded section; nothing is written', async () => {
    const {relaxRoot, dir} = await recipe()
    const file = path.join(dir, 'PITFAIL.md')
    const before = await readFile(file, 'utf8')
    const cases: Array<[string[], RegExp]> = [
      [['--symptom', ' ', '--cause', 'c', '--fix', 'f'], /the symptom is empty/],
      [['--symptom', 's\nmore', '--cause', 'c', '--fix', 'f'], /the symptom must be one line/],
      [['--symptom', 's', '--cause', 'c'.repeat(301), '--fix', 'f'], /the cause is 301 characters/],
      [['--symptom', 's', '--cause', 'c', '--fix', 'end it here -->'], /HTML comment marker/],
      [['--symptom', 's'], /missing --cause, --fix/],
    ]
    for (const [args, message] of cases) {
      const r = await add(relaxRoot, ...args, '--json')
      expect(r.json.error.exit, args.join(' ')).toBe(2)
      expect(r.json.error.message).toMatch(message)
    }
    expect(await readFile(file, 'utf8')).toBe(before)
  })

  it('--from-last-failure drafts from the failed check: shown until accepted, recorded with --yes or as edited with --edit', async () => {
    const {relaxRoot, dir} = await recipe()
    const none = await add(relaxRoot, '--from-last-failure', '--json')
    expect(none.json.error).toMatchObject({code: 'E_NO_FAILURE', exit: 3})

    await editFile(dir, 'run-qwen3-4B-8xgpu-nemo-gym-calendar.sh', (t) => t.replace(/--n-samples-per-prompt \d+/, '--n-samples-per-prompt 1'))
    const v = await cli(['verify', 'calendar', '--level', 'static', '--relax-root', relaxRoot])
    expect(v.exitCode).toBe(4)

    const shown = await add(relaxRoot, '--from-last-failure', '--json')
    expect(shown.json.error).toMatchObject({code: 'E_DRAFT_NOT_ACCEPTED', exit: 2})
    expect(shown.json.error.details.draft).toMatch(/\*\*--n-samples-per-prompt 1: GRPO needs group variance\.\*\* → the static check "at least 4 samples per prompt" \(static\.run-samples\) did not hold\. → Use at least 4; one sample per prompt gives zero advantage\.$/)

    const file = path.join(dir, 'PITFAIL.md')
    const before = await readFile(file, 'utf8')
    const dry = await add(relaxRoot, '--from-last-failure', '--dry-run')
    expect(dry.exitCode).toBe(0)
    expect(await readFile(file, 'utf8')).toBe(before)

    // An "editor" that rewrites the cause line, as a person would.
    const editor = path.join(await temp('gr-editor-'), 'edit.sh')
    await writeFile(editor, '#!/bin/sh\nsed -i "s/^cause: .*/cause: the run script was copied from a smoke test/" "$1"\n')
    await chmod(editor, 0o755)
    const edited = await cli(['pitfall', 'add', 'calendar', '--relax-root', relaxRoot, '--from-last-failure', '--edit', '--json'], {EDITOR: editor})
    expect(edited.exitCode, edited.stderr).toBe(0)
    expect(edited.json.line).toContain('→ the run script was copied from a smoke test. →')
    expect(edited.json.from).toMatchObject({rung: 'static', check: 'static.run-samples'})

    const yes = await add(relaxRoot, '--from-last-failure', '--yes', '--json')
    expect(yes.json.error).toMatchObject({code: 'E_PITFALL_DUPLICATE'})
  })

  it('a failing editor records nothing', async () => {
    const {relaxRoot, dir} = await recipe()
    const file = path.join(dir, 'PITFAIL.md')
    const before = await readFile(file, 'utf8')
    const r = await cli(['pitfall', 'add', 'calendar', '--relax-root', relaxRoot, '--symptom', 's', '--cause', 'c', '--fix', 'f', '--edit', '--json'], {EDITOR: 'false'})
    expect(r.json.error).toMatchObject({code: 'E_EDITOR_FAILED', exit: 3})
    expect(await readFile(file, 'utf8')).toBe(before)
  })
})

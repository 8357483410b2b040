/**
 * The user-facing steps called in-process on a generated recipe, no build needed: what `prepare
 * --dry-run`, `handoff` and `status` report, and a climb printing only through the printer it is
 * given (its warning included), never to the process's own streams.
 */
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it, vi} from 'vitest'

import {verifyRecipe} from '../../src/ladder/index.js'
import {recipeHandoff} from '../../src/steps/handoff.js'
import {prepareRecipe} from '../../src/steps/prepare.js'
import {recipeStatus} from '../../src/steps/status.js'
import {snapshotRoot} from '../helpers/cli.js'
import {generatedRecipe} from '../helpers/recipes.js'

describe('steps, in-process', () => {
  let relaxRoot: string
  let dir: string
  let state: string
  let env: NodeJS.ProcessEnv

  beforeAll(async () => {
    ;({relaxRoot, dir} = await generatedRecipe('calendar'))
    state = await mkdtemp(path.join(os.tmpdir(), 'gr-steps-state-'))
    env = {PATH: process.env.PATH, XDG_STATE_HOME: state, NEMO_GYM_SOURCE_DATA: '/shared/nemo-gym/calendar_train.jsonl', NEMO_GYM_IMAGE: 'relax-nemo-gym:calendar', GYMRECIPE_GYM_ROOT: snapshotRoot}
  }, 120_000)

  afterAll(async () => {
    await rm(relaxRoot, {recursive: true, force: true})
    await rm(state, {recursive: true, force: true})
  })

  it('prepare --dry-run plans the script run from the Relax root and runs nothing', async () => {
    const plan = await prepareRecipe({relaxRoot, recipe: 'calendar', dryRun: true, smoke: false, env, stdout: process.stdout, stderr: process.stderr})
    expect(plan).toMatchObject({recipe: 'calendar', dir, status: 'planned', dryRun: true, cwd: relaxRoot, source: '/shared/nemo-gym/calendar_train.jsonl', preview: '/shared/nemo-gym/calendar_train_relax.jsonl', image: 'relax-nemo-gym:calendar', envShSourced: true})
    expect(plan.command).toEqual([expect.stringMatching(/(^|\/)bash$/), 'examples/nemo_gym_agentic/recipes/calendar/prepare_calendar.sh'])
    expect(plan.ladder).toBeUndefined()
  })

  it('handoff names the three bare commands and every rung not passed yet, with the command that checks it', async () => {
    const report = await recipeHandoff({relaxRoot, recipe: 'calendar', env, write: false, dryRun: false})
    expect(report.commands.map((c) => c.step)).toEqual(['prepare', 'start', 'train'])
    expect(report.data).toEqual({path: '/shared/nemo-gym/calendar_train.jsonl', exists: false})
    expect(report.rungs.map((r) => r.status)).toEqual(['never', 'never', 'never', 'never', 'never', 'never'])
    expect(report.unverified[0].command).toContain('gymrecipe verify calendar --level static')
  })

  it('a climb prints only through its printer: the rung lines, and a verdict that could not be recorded as a warning', async () => {
    const lines: string[] = []
    const warnings: string[] = []
    const stdout = vi.spyOn(process.stdout, 'write')
    const stderr = vi.spyOn(process.stderr, 'write')
    try {
      // A file where the state folder should be: the verdict cannot be written.
      const blocked = path.join(state, 'blocked')
      await writeFile(blocked, 'not a folder\n')
      const report = await verifyRecipe({relaxRoot, recipe: 'calendar', level: 'static', gymRoot: snapshotRoot, smoke: false, env: {...env, XDG_STATE_HOME: blocked}, printer: {live: false, line: (text) => lines.push(text), warn: (text) => warnings.push(text)}})
      expect(report.status).toBe('pass')
      expect(lines[0]).toBe('static rung')
      expect(lines.at(-1)).toBe('✔ static rung: pass')
      expect(warnings).toEqual([expect.stringMatching(/^warning: the static verdict could not be recorded: /)])
      expect(stdout).not.toHaveBeenCalled()
      expect(stderr).not.toHaveBeenCalled()
    } finally {
      stdout.mockRestore()
      stderr.mockRestore()
    }
  })

  it('status reads every rung\'s standing from the verdicts recorded, and sees no container or Gateway here', async () => {
    await verifyRecipe({relaxRoot, recipe: 'calendar', level: 'static', gymRoot: snapshotRoot, smoke: false, env})
    const report = await recipeStatus({relaxRoot, recipe: 'calendar', env: {...env, NEMO_GYM_GATEWAY_PORT: '1'}})
    expect(report.ladder.map((r) => [r.rung, r.status])).toEqual([['static', 'passed'], ['data', 'never'], ['service', 'never'], ['network', 'never'], ['trial', 'never'], ['training', 'never']])
    expect(report.envShSourced).toBe(true)
  })
})

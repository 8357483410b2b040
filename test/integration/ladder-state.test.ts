import {appendFile, copyFile, readFile, rm, utimes, writeFile} from 'node:fs/promises'
import path from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'

import {runRung} from '../../src/ladder/runner.js'
import {Scratch} from '../../src/ladder/scratch-store.js'
import {ladderStanding} from '../../src/ladder/state.js'
import {resolveRecipe} from '../../src/recipe/target.js'
import type {CheckContext, CheckOutcome, Rung, RungDefinition} from '../../src/ladder/types.js'
import {readLadderState, recordRungVerdict} from '../../src/runtime/ladder-state.js'
import {recipeStatePath} from '../../src/runtime/state-paths.js'
import {writeRunState} from '../../src/runtime/run-state.js'
import {dataCase, type DataCase, NO_DOCKER, removeDataCases, SNAPSHOT_ROWS} from '../helpers/data-rung.js'
import {editFile} from '../helpers/recipes.js'

afterAll(removeDataCases)

/** A rung whose one check answers what the test says: the verdict machinery, not the checks, is under test. */
function scripted(rung: Rung, outcome: CheckOutcome): RungDefinition {
  return {rung, checks: () => [{id: `${rung}.scripted`, title: `scripted ${rung} check`, run: async () => outcome}]}
}

async function context(c: DataCase, env: NodeJS.ProcessEnv): Promise<CheckContext> {
  return {target: await resolveRecipe(c.relaxRoot, c.recipe), options: {env, smoke: false}, scratch: new Scratch()}
}

async function caseWithData(): Promise<{c: DataCase; env: NodeJS.ProcessEnv; file: string}> {
  const c = await dataCase('calendar')
  const file = path.join(c.data, 'calendar_train.jsonl')
  await copyFile(SNAPSHOT_ROWS.calendar, file)
  return {c, file, env: {...process.env, ...NO_DOCKER, NEMO_GYM_SOURCE_DATA: file}}
}

async function standingOf(c: DataCase, env: NodeJS.ProcessEnv, rung: Rung) {
  return (await ladderStanding(await context(c, env))).rungs.find((r) => r.rung === rung)!
}

describe('lasting verdicts', () => {
  it('a passed static rung goes stale when a script changes, but not when the documentation does', async () => {
    const {c, env} = await caseWithData()
    await runRung(scripted('static', {status: 'pass', message: 'ok'}), await context(c, env), {render: false})
    expect(await standingOf(c, env, 'static')).toMatchObject({status: 'passed', reason: null})
    await appendFile(path.join(c.dir, 'PITFAIL.md'), '\nnotes\n')
    await appendFile(path.join(c.dir, 'README.md'), '\nnotes\n')
    expect((await standingOf(c, env, 'static')).status).toBe('passed')
    await editFile(c.dir, 'env.sh', (t) => `${t}\n# a comment is a change too\n`)
    expect(await standingOf(c, env, 'static')).toMatchObject({status: 'stale', reason: 'the recipe files changed since it passed'})
  })

  it('a passed data rung goes stale when the data file grows, is touched or is removed', async () => {
    const {c, env, file} = await caseWithData()
    await runRung(scripted('data', {status: 'pass', message: 'ok'}), await context(c, env), {render: false})
    expect((await standingOf(c, env, 'data')).status).toBe('passed')
    const recorded = (await readLadderState(c.dir, env)).rungs.data.inputs.data
    expect(recorded).toMatchObject({path: file, size: (await readFile(file)).length})

    await utimes(file, new Date(), new Date(Date.now() + 60_000))
    expect(await standingOf(c, env, 'data')).toMatchObject({status: 'stale', reason: 'the data file changed since it passed'})

    await runRung(scripted('data', {status: 'pass', message: 'ok'}), await context(c, env), {render: false})
    expect((await standingOf(c, env, 'data')).status).toBe('passed')
    await appendFile(file, (await readFile(SNAPSHOT_ROWS.calendar, 'utf8')).split('\n')[0] + '\n')
    expect((await standingOf(c, env, 'data')).status).toBe('stale')

    await runRung(scripted('data', {status: 'pass', message: 'ok'}), await context(c, env), {render: false})
    await rm(file)
    expect((await standingOf(c, env, 'data')).status).toBe('stale')
  })

  it('a service verdict is unconfirmed when the service cannot be asked now, and stale on another image', async () => {
    const {c, env} = await caseWithData()
    const inputs = {files: undefined as string | undefined, imageId: 'sha256:1111', serviceEpoch: 'epoch-1'}
    // Record the files as they are, then a service verdict against an image and an epoch.
    await runRung(scripted('static', {status: 'pass', message: 'ok'}), await context(c, env), {render: false})
    inputs.files = (await readLadderState(c.dir, env)).rungs.static.inputs.files
    await recordRungVerdict(c.dir, 'service', {status: 'pass', at: new Date().toISOString(), inputs}, undefined, env)
    expect(await standingOf(c, env, 'service')).toMatchObject({status: 'unconfirmed', reason: 'the service image and the Gateway process (service_epoch) cannot be read now'})
  })

  it('a training verdict goes stale when another submission is recorded', async () => {
    const {c, env} = await caseWithData()
    const submission = (id: string) => writeRunState({recipe: c.recipe, recipeDir: c.dir, submissionId: id, dashboardAddress: 'http://127.0.0.1:1', logFile: null, submittedAt: new Date().toISOString(), smoke: false}, env)
    await submission('relax-a')
    await runRung(scripted('training', {status: 'pass', message: 'ok'}), await context(c, env), {render: false})
    expect((await standingOf(c, env, 'training')).status).toBe('passed')
    await submission('relax-b')
    expect(await standingOf(c, env, 'training')).toMatchObject({status: 'stale', reason: 'the training submission changed since it passed'})
  })

  it('a failed rung is recorded as failed with its failing check, secrets removed; a later pass keeps that failure', async () => {
    const {c, env: base} = await caseWithData()
    const env = {...base, HF_TOKEN: 'hf_planted_Secret_9c1d'}
    const outcome: CheckOutcome = {status: 'fail', message: 'download refused with hf_planted_Secret_9c1d', hint: 'set HF_TOKEN (now hf_planted_Secret_9c1d)'}
    await runRung(scripted('data', outcome), await context(c, env), {render: false})
    const state = await readLadderState(c.dir, env)
    expect(state.rungs.data.status).toBe('fail')
    expect(state.lastFailure).toMatchObject({rung: 'data', id: 'data.scripted', message: 'download refused with <redacted>', hint: 'set HF_TOKEN (now <redacted>)'})
    expect(await readFile(recipeStatePath('ladder', c.dir, env), 'utf8')).not.toContain('hf_planted_Secret_9c1d')
    expect(await standingOf(c, env, 'data')).toMatchObject({status: 'failed'})

    await runRung(scripted('data', {status: 'pass', message: 'ok'}), await context(c, env), {render: false})
    expect((await standingOf(c, env, 'data')).status).toBe('passed')
    expect((await readLadderState(c.dir, env)).lastFailure?.id).toBe('data.scripted')
  })

  it('a skipped check leaves the rung incomplete, never passed; a state file of another folder or unreadable is ignored', async () => {
    const {c, env} = await caseWithData()
    await runRung(scripted('static', {status: 'skip', message: 'not checked'}), await context(c, env), {render: false})
    expect((await standingOf(c, env, 'static')).status).toBe('incomplete')
    const file = recipeStatePath('ladder', c.dir, env)
    await writeFile(file, JSON.stringify({recipeDir: '/elsewhere', rungs: {static: {status: 'pass', at: 'x', inputs: {}}}}))
    expect((await standingOf(c, env, 'static')).status).toBe('never')
    await writeFile(file, '{not json')
    expect((await standingOf(c, env, 'static')).status).toBe('never')
  })
})

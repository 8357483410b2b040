/**
 * Lasting verdicts: after each rung, what it concluded and against which inputs (recipe files,
 * data file, image, Gateway process, Ray submission). Read back later, a verdict whose inputs
 * changed since is stale, not passed; one whose inputs cannot be read now is unconfirmed.
 */
import {createHash} from 'node:crypto'
import {promises as fsp} from 'node:fs'
import path from 'node:path'

import {redactorFor} from '../redact.js'
import {objectFields, readyz} from '../runtime/http.js'
import {type FailureRecord, readLadderState, recordRungVerdict, type RungInputs, type RungRecord} from '../runtime/ladder-state.js'
import {readRunState} from '../runtime/run-state.js'
import {dataPlan} from './data/source.js'
import {RUNG_DEFINITIONS} from './rungs.js'
import {once, ScratchKey} from './scratch.js'
import {runningService} from './service/context.js'
import {type CheckContext, type Rung, type RungReport, RUNGS} from './types.js'

/** Which inputs each rung's verdict depends on. */
/** What each rung's verdict depends on, as the rung itself declares it. */
const RUNG_INPUTS = Object.fromEntries(RUNG_DEFINITIONS.map((d) => [d.rung, d.inputs])) as Record<Rung, Array<keyof RungInputs>>

const INPUT_WORDS: Record<keyof RungInputs, string> = {
  files: 'the recipe files',
  data: 'the data file',
  imageId: 'the service image',
  serviceEpoch: 'the Gateway process (service_epoch)',
  submissionId: 'the training submission',
}

/** Recipe documentation is excluded: recording a pitfall or a hand-off must not stale a verdict. */
const NOT_AN_INPUT = /\.(?:md|png|jpe?g|gif|svg)$/i

async function filesDigest(dir: string): Promise<string> {
  const hash = createHash('sha256')
  const walk = async (at: string, prefix: string): Promise<void> => {
    const entries = (await fsp.readdir(at, {withFileTypes: true}).catch(() => [])).sort((a, b) => a.name.localeCompare(b.name))
    for (const entry of entries) {
      if (entry.name.startsWith('.') || NOT_AN_INPUT.test(entry.name)) continue
      const rel = `${prefix}${entry.name}`
      if (entry.isDirectory()) await walk(path.join(at, entry.name), `${rel}/`)
      else if (entry.isFile()) hash.update(`${rel}\0`).update(await fsp.readFile(path.join(at, entry.name))).update('\0')
    }
  }
  await walk(dir, '')
  return `sha256:${hash.digest('hex')}`
}

const FILES_NOW = new ScratchKey<Promise<string>>('state.files-now')
const DATA_NOW = new ScratchKey<Promise<RungInputs['data']>>('state.data-now')
const SERVICE_NOW = new ScratchKey<Promise<{imageId: string | null; serviceEpoch: string | null}>>('state.service-now')

/** The inputs a rung depends on, as they are now (each read once per run, whichever rungs need it). */
async function inputsNow(ctx: CheckContext, rung: Rung): Promise<RungInputs> {
  const inputs: RungInputs = {}
  for (const key of RUNG_INPUTS[rung]) {
    if (key === 'files') inputs.files = await once(ctx, FILES_NOW, () => filesDigest(ctx.target.dir))
    if (key === 'data') {
      inputs.data = await once(ctx, DATA_NOW, async () => {
        const plan = await dataPlan(ctx)
        const stat = plan.file ? await fsp.stat(plan.file).catch(() => undefined) : undefined
        return plan.file && stat?.isFile() ? {path: plan.file, size: stat.size, mtimeMs: Math.trunc(stat.mtimeMs)} : null
      })
    }
    if (key === 'imageId' || key === 'serviceEpoch') {
      const now = await once(ctx, SERVICE_NOW, async () => {
        const found = await runningService(ctx)
        if ('problem' in found) return {imageId: null, serviceEpoch: null}
        const {answer} = await readyz(found.ok.urls.gateway, 2000)
        const epoch = objectFields(answer?.json).service_epoch
        return {imageId: found.ok.container.imageId, serviceEpoch: typeof epoch === 'string' ? epoch : null}
      })
      inputs[key] = now[key]
    }
    if (key === 'submissionId') {
      inputs.submissionId = ctx.handoff?.train?.runState?.submissionId ?? (await readRunState(ctx.target.dir, ctx.options.env))?.submissionId ?? null
    }
  }
  return inputs
}

/**
 * Record a rung's verdict with its inputs. A rung that did not run (not-run) leaves the earlier
 * record alone. Recording never changes the verdict: a state directory that cannot be written
 * is reported as a warning by the caller.
 */
export async function recordVerdict(ctx: CheckContext, report: RungReport): Promise<void> {
  if (report.status === 'not-run') return
  const at = new Date().toISOString()
  // Kept on disk and later copied into PITFAIL.md: a secret in a check's message, a path or an
  // input never is.
  const redact = redactorFor(ctx.options.env)
  const record: RungRecord = {status: report.status, at, inputs: redact.value(await inputsNow(ctx, report.rung))}
  const failed = report.checks.find((c) => c.status === 'fail')
  const failure: FailureRecord | undefined = failed
    ? {
        rung: report.rung,
        id: failed.id,
        title: failed.title,
        message: redact.text(failed.message),
        at,
        ...(failed.hint ? {hint: redact.text(failed.hint)} : {}),
        ...(failed.file ? {file: redact.text(failed.file)} : {}),
        ...(failed.line ? {line: failed.line} : {}),
      }
    : undefined
  await recordRungVerdict(ctx.target.dir, report.rung, record, failure, ctx.options.env)
}

export type StandingStatus = 'passed' | 'failed' | 'incomplete' | 'stale' | 'unconfirmed' | 'never'

/** Where one rung stands now: its last verdict judged against the inputs of now. */
export interface RungStanding {
  rung: Rung
  status: StandingStatus
  /** When the last verdict was reached (null: never checked). */
  at: string | null
  /** Why it is not passed on current inputs. */
  reason: string | null
}

function sameInput(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null)
}

/** Every rung's standing, in ladder order. */
export async function ladderStanding(ctx: CheckContext): Promise<{rungs: RungStanding[]; lastFailure: FailureRecord | null}> {
  const state = await readLadderState(ctx.target.dir, ctx.options.env)
  const rungs: RungStanding[] = []
  for (const rung of RUNGS) {
    const record = state.rungs[rung]
    if (!record) {
      rungs.push({rung, status: 'never', at: null, reason: 'never checked'})
      continue
    }
    if (record.status !== 'pass') {
      rungs.push({rung, status: record.status === 'fail' ? 'failed' : 'incomplete', at: record.at, reason: record.status === 'fail' ? 'failed when last checked' : 'could not be fully checked'})
      continue
    }
    // Compared as recorded: redacted the same way.
    const now = redactorFor(ctx.options.env).value(await inputsNow(ctx, rung))
    const keys = RUNG_INPUTS[rung]
    // A service that does not answer now is unknown, not changed; a data file that is gone has changed.
    const unreadable = keys.filter((k) => (k === 'imageId' || k === 'serviceEpoch') && now[k] === null && record.inputs[k] != null)
    const changed = keys.filter((k) => !unreadable.includes(k) && !sameInput(record.inputs[k], now[k]))
    if (changed.length > 0) rungs.push({rung, status: 'stale', at: record.at, reason: `${changed.map((k) => INPUT_WORDS[k]).join(' and ')} changed since it passed`})
    else if (unreadable.length > 0) rungs.push({rung, status: 'unconfirmed', at: record.at, reason: `${unreadable.map((k) => INPUT_WORDS[k]).join(' and ')} cannot be read now`})
    else rungs.push({rung, status: 'passed', at: record.at, reason: null})
  }
  return {rungs, lastFailure: state.lastFailure ?? null}
}

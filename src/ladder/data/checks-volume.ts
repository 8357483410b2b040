import {recipeFiles} from '../static/recipe-files.js'
import {flagValues} from '../../recipe/shell.js'
import type {Check, CheckContext} from '../types.js'
import {dataScan, sourceUnusable} from './scan.js'

interface Consumption {
  /** Prompts one rollout step takes (--rollout-batch-size). */
  perStep: number
  /** Rollout steps of the run (--num-rollout). */
  steps: number
  from: string
}

/** What the training consumes: from recipe.yaml, else from the training script's own flags. */
async function consumption(ctx: CheckContext): Promise<Consumption | undefined> {
  const rollout = ctx.target.contract?.training.rollout
  if (rollout) return {perStep: rollout.batch_size, steps: rollout.num_rollout, from: 'recipe.yaml (training.rollout)'}
  for (const script of (await recipeFiles(ctx)).training) {
    const perStep = Number(flagValues(script.lines, '--rollout-batch-size')[0]?.value)
    const steps = Number(flagValues(script.lines, '--num-rollout')[0]?.value)
    if (Number.isInteger(perStep) && perStep > 0 && Number.isInteger(steps) && steps > 0) return {perStep, steps, from: script.name}
  }
  return undefined
}

export const enoughRows: Check = {
  id: 'data.enough-rows',
  title: 'the file holds enough rows for the run',
  async run(ctx) {
    const scan = await dataScan(ctx)
    const {stats, plan} = scan
    if (!stats || !plan.file) return sourceUnusable(scan)
    const wanted = await consumption(ctx)
    if (!wanted) return {status: 'skip', message: 'not checked: neither recipe.yaml nor a training script gives --rollout-batch-size and --num-rollout'}
    const rows = stats.objectRows
    const prompts = wanted.perStep * wanted.steps
    const evidence = {rows, promptsPerRolloutStep: wanted.perStep, rolloutSteps: wanted.steps, promptsConsumed: prompts, passesOverData: rows > 0 ? Number((prompts / rows).toFixed(2)) : null, from: wanted.from}
    if (rows < wanted.perStep && plan.smoke) {
      // A smoke run proves the plumbing on a few rows; Relax cycles them to fill a step.
      return {status: 'pass', message: `SMOKE run: ${rows} row(s), fewer than one rollout step of ${wanted.perStep} prompts (from ${wanted.from}); each step repeats them ${(wanted.perStep / Math.max(rows, 1)).toFixed(1)} times: not enough for real training`, evidence}
    }
    if (rows < wanted.perStep) {
      return {
        status: 'fail',
        message: `${rows} row(s) cannot fill one rollout step of ${wanted.perStep} prompts (--rollout-batch-size, from ${wanted.from})`,
        file: plan.file,
        hint: `Train on a file with at least ${wanted.perStep} rows (the environment's train split, or your own data), or lower training.rollout.batch_size in recipe.yaml for a smoke run.`,
        evidence,
      }
    }
    const passes = prompts / rows
    const repeat = passes <= 1 ? `uses ${prompts} of them (${(passes * 100).toFixed(0)}% of the data)` : `goes over the data ${passes.toFixed(1)} times`
    return {status: 'pass', message: `${rows} rows; the run (${wanted.steps} rollout steps x ${wanted.perStep} prompts, from ${wanted.from}) ${repeat}`, evidence}
  },
}

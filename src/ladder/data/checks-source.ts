import {promises as fsp} from 'node:fs'
import path from 'node:path'

import {isJsonObject} from '../../json/index.js'
import {parseRow} from './convert.js'
import {type Check, type CheckOutcome, passOrProblems} from '../types.js'
import {dataScan} from './scan.js'
import {dataPlan} from './source.js'


const PREPARE_HINT = 'Run `gymrecipe prepare <recipe>` to materialize it, or fix NEMO_GYM_SOURCE_DATA in env.sh.'

export const sourcePath: Check = {
  id: 'data.source',
  title: 'NEMO_GYM_SOURCE_DATA is the raw file, absolute, present and non-empty',
  async run(ctx) {
    const plan = await dataPlan(ctx)
    const id = this.id
    const title = this.title
    if (!plan.value) {
      return {status: 'fail', message: `NEMO_GYM_SOURCE_DATA is not set${plan.envError ? ` (${plan.envError})` : ''}`, file: path.join(ctx.target.dir, 'env.sh'), hint: 'Set it in env.sh to an absolute path on shared storage, e.g. /shared/data/nemo-gym/<raw file>.'}
    }
    const problems: CheckOutcome[] = []
    const name = path.basename(plan.value)
    if (!path.isAbsolute(plan.value)) {
      problems.push({status: 'fail', message: `NEMO_GYM_SOURCE_DATA is relative (${plan.value}); every Ray node would resolve it from its own working directory`, hint: 'Use an absolute path on storage every node mounts at the same place.'})
    }
    if (plan.expectedName === null) {
      problems.push({status: 'skip', message: `not checked: the expected raw file name is ${plan.expectedNameFrom}`, hint: 'Add recipe.yaml (gymrecipe new) or a RAW_FILENAME= line to the prepare script.'})
    } else if (name !== plan.expectedName) {
      problems.push({status: 'fail', message: `NEMO_GYM_SOURCE_DATA ends in ${name}, not ${plan.expectedName} (${plan.expectedNameFrom})`, hint: `Point it at .../${plan.expectedName}; the prepare script refuses any other name.`})
    }
    if (plan.file) {
      if (!plan.stat) problems.push({status: 'fail', message: `${plan.file} ${plan.statError ?? 'cannot be read'}`, file: plan.file, hint: PREPARE_HINT})
      else if (!plan.stat.isFile) problems.push({status: 'fail', message: `${plan.file} is not a regular file`, file: plan.file, hint: PREPARE_HINT})
      else if (plan.stat.size === 0) problems.push({status: 'fail', message: `${plan.file} is empty (0 bytes)`, file: plan.file, hint: PREPARE_HINT})
    }
    const pass: CheckOutcome = {status: 'pass', message: `${plan.file} (${plan.stat?.size} bytes)`, evidence: {file: plan.file, bytes: plan.stat?.size, expected: plan.expectedName, expectedFrom: plan.expectedNameFrom}}
    return passOrProblems(id, title, problems, pass)
  },
}

export const notConverted: Check = {
  id: 'data.not-converted',
  title: 'the source is raw Gym data, never the converted *_relax.jsonl',
  async run(ctx) {
    const plan = await dataPlan(ctx)
    if (!plan.value) return {status: 'skip', message: 'not checked: NEMO_GYM_SOURCE_DATA is not set'}
    const hint = 'Point NEMO_GYM_SOURCE_DATA at the raw Gym JSONL; the training job converts it itself (Calendar PITFAIL #6, GSM8K #2).'
    if (path.basename(plan.value).endsWith('_relax.jsonl')) {
      return {status: 'fail', message: `${path.basename(plan.value)} is the converted preview, not the raw data`, file: plan.file ?? plan.value, hint}
    }
    if (plan.file && plan.stat && plan.previewFile) {
      const preview = await fsp.stat(plan.previewFile).catch(() => undefined)
      if (preview && preview.dev === plan.stat.dev && preview.ino === plan.stat.ino) {
        return {status: 'fail', message: `${plan.file} and ${plan.previewFile} are the same file (a link)`, file: plan.file, hint}
      }
    }
    const scan = await dataScan(ctx)
    const first = scan.sample.find((s) => s.row === 1)
    if (!scan.stats || !first) return {status: 'skip', message: 'not checked: row 1 is not a readable JSON object (data.rows says why)'}
    const row = parseRow(first.text)
    if (isJsonObject(row) && Object.hasOwn(row, 'input') && isJsonObject(row.metadata) && !Object.hasOwn(row, 'responses_create_params') && !Object.hasOwn(row, 'question')) {
      return {status: 'fail', message: 'row 1 is already converted ({input, metadata}, no responses_create_params): this is a Relax preview under a raw name', file: plan.file!, line: first.line, hint}
    }
    return {status: 'pass', message: `${path.basename(plan.value)} holds raw Gym rows`}
  },
}

export const splitGuard: Check = {
  id: 'data.split',
  title: 'the dataset is a training split (or an explicit smoke run)',
  async run(ctx) {
    const plan = await dataPlan(ctx)
    const evidence = {split: plan.split, from: plan.splitFrom, smoke: plan.smoke}
    if (plan.split === null) return {status: 'skip', message: `not checked: the split is ${plan.splitFrom}`, hint: 'Record the contract with `gymrecipe new` so the split is known.', evidence}
    if (plan.split === 'train') return {status: 'pass', message: `train split (${plan.splitFrom})`, evidence}
    if (plan.smoke) {
      const why = ctx.options.smoke ? '--smoke was passed' : 'recipe.yaml sets data.smoke'
      return {status: 'pass', message: `SMOKE RUN: the ${plan.split} split is accepted only because ${why}; never train a real model on it`, evidence}
    }
    return {
      status: 'fail',
      message: `the ${plan.split} split is not training data (${plan.splitFrom})`,
      hint: 'Train on the train dataset (gymrecipe new --dataset <train>). For a smoke run only, pass --smoke: every report will say so.',
      evidence,
    }
  },
}

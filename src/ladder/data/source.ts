import {promises as fsp} from 'node:fs'
import path from 'node:path'

import {environmentsOf, type RecipeContract, SPLITS, type Split} from '../../contract/types.js'
import {maxLineBytes, nestsDeeperThan} from '../../json/input-policy.js'
import {once, ScratchKey, scriptEnv} from '../scratch.js'
import type {CheckContext} from '../types.js'
import {fieldsFromRow} from './fields.js'
import {codeOf, messageOf} from '../../errors.js'

/**
 * Everything the data checks need to know before reading a row: where NEMO_GYM_SOURCE_DATA
 * points (as env.sh sets it), what the recipe expects there, and where each expectation came
 * from. Hand-written recipes have no recipe.yaml, so expectations are read from their prepare
 * script or the data itself, and every check says so.
 */
export interface DataPlan {
  /** NEMO_GYM_SOURCE_DATA as env.sh (over the caller's environment) sets it. */
  value: string | undefined
  /** Why the environment could not be evaluated, when it could not. */
  envError?: string
  /** The absolute path, or null when the value is missing or relative. */
  file: string | null
  stat: {size: number; isFile: boolean; dev: number; ino: number} | null
  statError?: string
  /** True when the rows can be read: absolute path of a non-empty regular file. */
  readable: boolean
  expectedName: string | null
  expectedNameFrom: string
  /** The converted preview beside the raw file (`*_relax.jsonl`). */
  previewFile: string | null
  split: Split | null
  splitFrom: string
  smoke: boolean
  fields: string[]
  fieldsFrom: string
  /** NEMO_GYM_IMAGE from env.sh (the shared-storage probe prefers it). */
  image: string | null
  /** The environment the scripts see, for later rungs and probes. */
  env: Record<string, string>
}

const PLAN_KEY = new ScratchKey<Promise<DataPlan>>('data.plan')

/** The data plan of this ladder run, computed once. */
export function dataPlan(ctx: CheckContext): Promise<DataPlan> {
  return once(ctx, PLAN_KEY, () => buildPlan(ctx))
}

export function previewPathOf(rawFile: string): string {
  return rawFile.replace(/(\.jsonl)?$/, '_relax.jsonl')
}

async function buildPlan(ctx: CheckContext): Promise<DataPlan> {
  const {target, options} = ctx
  const contract = target.contract
  const {env, envError} = await scriptEnvironment(ctx)
  const value = env.NEMO_GYM_SOURCE_DATA || undefined
  const file = value && path.isAbsolute(value) ? path.normalize(value) : null
  const {stat, statError} = file ? await statFile(file) : {stat: null, statError: undefined}
  const prepareText = target.files.prepare ? await fsp.readFile(path.join(target.dir, target.files.prepare), 'utf8').catch(() => '') : ''

  const expected = contract
    ? {name: contract.data.raw_filename, from: 'recipe.yaml data.raw_filename'}
    : expectedNameFromScript(prepareText, target.files.prepare)
  const split = contract ? {split: contract.data.split, from: 'recipe.yaml data.split'} : splitFromName(expected.name ?? (file ? path.basename(file) : null))
  const readable = Boolean(file && stat?.isFile && stat.size > 0)
  const fields = contract ? contractFields(contract) : await fieldsWithoutContract(prepareText, target.files.prepare, readable ? file : null)

  return {
    value,
    envError,
    file,
    stat,
    statError,
    readable,
    expectedName: expected.name,
    expectedNameFrom: expected.from,
    previewFile: file ? previewPathOf(file) : null,
    split: split.split,
    splitFrom: split.from,
    smoke: options.smoke || (contract?.data.smoke ?? false),
    fields: fields.fields,
    fieldsFrom: fields.from,
    image: env.NEMO_GYM_IMAGE || null,
    env,
  }
}

/** The contract's verifier fields, plus the tools whenever the environment has tools. */
function contractFields(contract: RecipeContract): {fields: string[]; from: string} {
  const environments = environmentsOf(contract)
  if (environments.length > 1) {
    // Each environment's own fields are checked per row by data.environments.
    const common = contract.data.verifier_fields.filter((f) => environments.every((e) => e.verifier_fields.includes(f)))
    return {fields: [...common, 'environment', 'config'], from: `the fields all ${environments.length} environments read, and the environment/config every row routes by`}
  }
  const fields = [...contract.data.verifier_fields]
  const tools = 'responses_create_params.tools'
  if (contract.data.tools && !fields.includes(tools)) return {fields: [...fields, tools], from: 'recipe.yaml data.verifier_fields (+ tools: data.tools is true)'}
  return {fields, from: 'recipe.yaml data.verifier_fields'}
}

async function scriptEnvironment(ctx: CheckContext): Promise<{env: Record<string, string>; envError?: string}> {
  const dir = ctx.target.dir
  const plain = Object.fromEntries(Object.entries(ctx.options.env).filter((e): e is [string, string] => typeof e[1] === 'string'))
  try {
    await fsp.access(path.join(dir, 'env.sh'))
  } catch {
    return {env: plain, envError: `no env.sh in ${dir}; using the caller's environment`}
  }
  try {
    return {env: await scriptEnv(ctx)}
  } catch (error) {
    return {env: plain, envError: messageOf(error)}
  }
}

async function statFile(file: string): Promise<{stat: DataPlan['stat']; statError?: string}> {
  try {
    const s = await fsp.stat(file)
    return {stat: {size: s.size, isFile: s.isFile(), dev: s.dev, ino: s.ino}}
  } catch (error) {
    return {stat: null, statError: codeOf(error) === 'ENOENT' ? 'does not exist' : (codeOf(error) ?? messageOf(error))}
  }
}

/** The raw file name a hand-written prepare script insists on (RAW_FILENAME=..., "must end with /x.jsonl"). */
export function expectedNameFromScript(text: string, scriptName = 'the prepare script'): {name: string | null; from: string} {
  const patterns = [/^\s*(?:readonly\s+|export\s+)?RAW_FILENAME=["']?([\w.-]+\.jsonl)\b/m, /must end with \/([\w.-]+\.jsonl)\b/, /\$\{OUTPUT_DIR\}\/([\w.-]+\.jsonl)"?\s*\]\]/]
  for (const pattern of patterns) {
    const m = text.match(pattern)
    if (m && !m[1].endsWith('_relax.jsonl')) return {name: m[1], from: `${scriptName} (no recipe.yaml)`}
  }
  return {name: null, from: `unknown: no recipe.yaml, and ${scriptName} names no raw file`}
}

/** The split a file name such as calendar_train.jsonl or gsm8k_benchmark.jsonl announces. */
export function splitFromName(name: string | null): {split: Split | null; from: string} {
  if (!name) return {split: null, from: 'unknown: no recipe.yaml and no file name'}
  const words = name.replace(/\.jsonl$/, '').split(/[_.-]/)
  const aliases: Record<string, Split> = {val: 'validation', dev: 'validation', eval: 'validation', bench: 'benchmark'}
  for (const word of [...words].reverse()) {
    const split = (SPLITS as readonly string[]).includes(word) ? (word as Split) : aliases[word]
    if (split) return {split, from: `the file name ${name} (no recipe.yaml)`}
  }
  return {split: null, from: `unknown: no recipe.yaml, and ${name} names no split`}
}

/**
 * Verifier fields of a recipe without recipe.yaml: the VERIFIER_FIELDS its prepare script
 * validates, else the fields of the first row (the prompt, tools when present, and every
 * environment-specific top-level field).
 */
async function fieldsWithoutContract(prepareText: string, scriptName: string | undefined, file: string | null): Promise<{fields: string[]; from: string}> {
  const declared = prepareText.match(/^\s*VERIFIER_FIELDS=["']?([\w.,]+)["']?\s*$/m)
  if (declared) return {fields: declared[1].split(',').filter(Boolean), from: `VERIFIER_FIELDS in ${scriptName} (no recipe.yaml)`}
  const first = file ? await firstRow(file) : undefined
  if (first) return {fields: fieldsFromRow(first), from: 'the keys of the first row (no recipe.yaml): every row must have what row 1 has'}
  return {fields: ['responses_create_params.input'], from: 'the Gym row format only (no recipe.yaml, no readable first row)'}
}

/** The first non-blank line parsed as an object; gives up past the input policy's line limit. */
async function firstRow(file: string): Promise<Record<string, unknown> | undefined> {
  const handle = await fsp.open(file, 'r')
  try {
    const buffer = Buffer.alloc(1024 * 1024)
    const parts: Buffer[] = []
    let size = 0
    const limit = maxLineBytes()
    while (size <= limit) {
      const {bytesRead} = await handle.read(buffer, 0, buffer.length, null)
      const chunk = buffer.subarray(0, bytesRead)
      let start = 0
      for (;;) {
        const newline = chunk.indexOf(0x0a, start)
        const end = newline === -1 ? bytesRead : newline
        parts.push(Buffer.from(chunk.subarray(start, end)))
        size += end - start
        if (newline === -1 && bytesRead > 0) break // the line continues in the next chunk
        const line = Buffer.concat(parts).toString('utf8').replace(/^\uFEFF/, '')
        parts.length = 0
        size = 0
        if (line.trim() !== '') return parseObject(line)
        if (newline === -1) return undefined // end of file
        start = newline + 1
      }
    }
    return undefined
  } finally {
    await handle.close()
  }
}

function parseObject(line: string): Record<string, unknown> | undefined {
  if (nestsDeeperThan(line)) return undefined
  try {
    const value = JSON.parse(line)
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : undefined
  } catch {
    return undefined
  }
}

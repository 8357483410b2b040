/** The data source and split, the verifier's examples and the recipe's description. */
import {type ScriptedTurn, SPLITS} from '../../contract/types.js'
import {describeService, expectedRawFilename, type CheckContext} from '../../ladder/index.js'
import type {LoadedFile} from '../../recipe/files.js'
import {assignments, resolveWord} from '../../recipe/shell.js'
import {pythonConstants} from '../../runtime/python-constants.js'
import {Reading} from './reading.js'
import {lineOf} from './service.js'

export function readData(r: Reading, ctx: CheckContext, prepare: LoadedFile | undefined, env: LoadedFile | undefined, run: LoadedFile | undefined): void {
  const source = run && assignments(run.lines).find((a) => a.name === 'NEMO_GYM_SOURCE_DATA')
  const fromRun = source && resolveWord(source.value, run!.lines).value?.match(/([A-Za-z0-9_.-]+\.jsonl)$/)?.[1]
  const raw = (prepare ? expectedRawFilename(ctx, prepare, env) : undefined) ?? (fromRun && !fromRun.endsWith('_relax.jsonl') ? {name: fromRun, from: `the NEMO_GYM_SOURCE_DATA default at ${run!.name}:${source!.line}`} : undefined)
  if (!raw) {
    for (const p of ['/data/raw_filename', '/data/split', '/data/smoke']) r.missing(p, 'neither the prepare script (NEMO_GYM_SOURCE_DATA must end with /<name>.jsonl) nor the training script\'s NEMO_GYM_SOURCE_DATA default names the raw file')
    return
  }
  r.set('/data/raw_filename', raw.name, raw.from)
  const split = raw.name.match(/_(train|validation|example|benchmark|test)\.jsonl$/)?.[1]
  if (split && (SPLITS as readonly string[]).includes(split)) {
    r.set('/data/split', split, `the raw file name ${raw.name}`)
    r.set('/data/smoke', split !== 'train', `the ${split} split`)
  } else {
    r.missing('/data/split', `the raw file name ${raw.name} does not end in _<split>.jsonl`)
    r.missing('/data/smoke', `the split of ${raw.name} is unknown`)
  }
}

export async function readVerifier(r: Reading, ctx: CheckContext, env: Record<string, string>, verifiers: LoadedFile[]): Promise<void> {
  const direct = verifiers.find((v) => !v.name.endsWith('_trial.py'))
  const trial = verifiers.find((v) => v.name.endsWith('_trial.py'))
  if (direct || trial) r.set('/verifier/kind', direct ? 'direct' : 'golden', `${(direct ?? trial)!.name}${direct ? ' (POSTs /verify)' : ' (a trial through the Gateway)'}`)
  else r.missing('/verifier/kind', 'the recipe has no verify_*.py')
  const python = (await describeService(ctx.target, env)).verifier?.python
  if (python) r.set('/verifier/python', python, 'the path the verifier or README runs it with')
  else r.missing('/verifier/python', 'no verifier or README names the Gym venv Python that runs it')
  const verifier = direct ?? trial
  if (verifier) await readVerifierConstants(r, verifier)
  const why = `${verifier?.name ?? 'no verifier'}: its known-correct and known-wrong outputs are code, not constants gymrecipe can read`
  for (const p of ['/verifier/task', '/verifier/payload', '/verifier/correct', '/verifier/wrong', '/verifier/success_reward']) r.missing(p, why)
  if (!trial) r.set('/trial', null, 'no trial verifier (verify_*_trial.py) in the folder')
  else r.missing('/trial', `${trial.name}: its task and scripted turns are code, not data gymrecipe can read`)
}

/** Output items as the Responses API writes them, back to the contract's scripted turns. */
export function turnsOf(items: unknown): ScriptedTurn[] | undefined {
  if (!Array.isArray(items)) return undefined
  const turns: ScriptedTurn[] = []
  for (const item of items) {
    const o = item && typeof item === 'object' ? (item as Record<string, unknown>) : {}
    if (o.type === 'function_call' && typeof o.name === 'string' && typeof o.arguments === 'string') {
      try {
        turns.push({tool_call: {name: o.name, arguments: JSON.parse(o.arguments) as Record<string, unknown>}})
      } catch {
        return undefined
      }
    } else if (o.type === 'message' && Array.isArray(o.content)) {
      const text = (o.content as Array<Record<string, unknown>>).map((c) => (typeof c.text === 'string' ? c.text : '')).join('')
      turns.push({text})
    } else return undefined
  }
  return turns
}

/** The examples a verifier keeps as module constants (SUCCESS_REWARD, INLINE_PAYLOAD, CORRECT_OUTPUT, …). */
export async function readVerifierConstants(r: Reading, verifier: LoadedFile): Promise<void> {
  const names = ['SUCCESS_REWARD', 'FAILURE_REWARD', 'TASK_JSONL', 'TASK_ROW', 'INLINE_PAYLOAD', 'CORRECT_OUTPUT', 'WRONG_OUTPUT']
  const read = await pythonConstants(verifier.path, names)
  if ('error' in read) {
    r.notes.push(`the constants of ${verifier.name} could not be read: ${read.error}`)
    return
  }
  const {constants} = read
  const where = (name: string) => lineOf(verifier, new RegExp(`^${name}\\s*=`))
  if (typeof constants.SUCCESS_REWARD === 'number') r.set('/verifier/success_reward', constants.SUCCESS_REWARD, where('SUCCESS_REWARD'))
  if (typeof constants.FAILURE_REWARD === 'number' || constants.FAILURE_REWARD === null) r.set('/verifier/failure_reward', constants.FAILURE_REWARD, where('FAILURE_REWARD'))
  if ('INLINE_PAYLOAD' in constants) r.set('/verifier/payload', constants.INLINE_PAYLOAD, where('INLINE_PAYLOAD'))
  if (constants.TASK_JSONL === null) r.set('/verifier/task', null, where('TASK_JSONL'))
  else if (typeof constants.TASK_JSONL === 'string' && constants.TASK_JSONL.startsWith('/opt/nemo-gym/') && typeof constants.TASK_ROW === 'number') {
    r.set('/verifier/task', {file: constants.TASK_JSONL.slice('/opt/nemo-gym/'.length), row: constants.TASK_ROW}, where('TASK_JSONL'))
  }
  for (const [name, pointer] of [['CORRECT_OUTPUT', '/verifier/correct'], ['WRONG_OUTPUT', '/verifier/wrong']] as const) {
    const turns = turnsOf(constants[name])
    if (turns) r.set(pointer, turns, where(name))
  }
}

export function readDescription(r: Reading, readme: string): void {
  const lines = readme.split('\n')
  const index = lines.findIndex((l) => l.trim() && !l.startsWith('#') && !l.startsWith('```') && !l.startsWith('|') && !l.startsWith('!['))
  if (index !== -1) r.set('/description', lines[index].trim().slice(0, 300), `README.md:${index + 1}`)
  else r.missing('/description', 'README.md has no opening paragraph')
}

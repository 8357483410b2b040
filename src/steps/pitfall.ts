/**
 * `gymrecipe pitfall add`: one numbered symptom → cause → fix entry in the recipe's PITFAIL.md,
 * given on the command line or drafted from the last failed check the ladder recorded.
 */
import path from 'node:path'

import {ExitCode, GymError, usageError} from '../errors.js'
import {resolveRecipe} from '../recipe/target.js'
import {REDACTED, Redactor} from '../redact.js'
import {editText} from '../runtime/editor.js'
import {readTextIfExists, writeFileAtomic} from '../runtime/fs.js'
import {type FailureRecord, readLadderState} from '../runtime/ladder-state.js'
import {appendEntry, entriesOf, entryLine, partProblem, type PitfallEntry, symptomKey} from '../scaffold/pitfalls.js'

export interface PitfallAddOptions {
  relaxRoot: string
  recipe: string
  symptom?: string
  cause?: string
  fix?: string
  fromLastFailure: boolean
  /** Open the draft in $VISUAL/$EDITOR before recording it. */
  edit: boolean
  /** --yes: a draft is recorded as it is. Without it (or --edit), a draft is only shown. */
  accepted: boolean
  dryRun: boolean
  env: NodeJS.ProcessEnv
}

export interface PitfallAddResult {
  recipe: string
  file: string
  number: number
  entry: PitfallEntry
  line: string
  dryRun: boolean
  /** The failed check the draft came from, when --from-last-failure. */
  from: {rung: string; check: string; at: string} | null
}

/**
 * A draft from a failed check: its message is the symptom, its hint the fix. PITFAIL.md is
 * committed: a line that holds a secret or an inline credential is not copied at all (redacting
 * it would still keep its shape and its neighbours), its place says so.
 */
export function draftFromFailure(failure: FailureRecord, recipe: string, redact: Redactor = new Redactor({})): PitfallEntry {
  const firstLine = (text: string) => text.split('\n')[0].trim()
  // The state keeps failures redacted already: a <redacted> in one marks such a line too.
  const copied = (text: string, what: string) => (text.includes(REDACTED) || redact.holdsSecret(text) ? `${what} (not copied: the line holds a credential)` : text)
  const fallbackFix = `fix what the check names, then rerun gymrecipe verify ${recipe} --level ${failure.rung}`
  return {
    symptom: copied(firstLine(failure.message), `the ${failure.rung} check "${failure.title}" failed`),
    cause: `the ${failure.rung} check "${failure.title}" (${failure.id}) did not hold`,
    fix: failure.hint ? copied(firstLine(failure.hint), fallbackFix) : fallbackFix,
  }
}

const EDIT_HEADER = `# One line each. Lines starting with # are ignored; an empty part cancels.\n`

function editable(entry: PitfallEntry): string {
  return `${EDIT_HEADER}symptom: ${entry.symptom}\ncause: ${entry.cause}\nfix: ${entry.fix}\n`
}

function parseEdited(text: string): PitfallEntry {
  const parts: Partial<PitfallEntry> = {}
  for (const line of text.split('\n')) {
    const m = line.match(/^(symptom|cause|fix):\s*(.*)$/)
    if (m && !line.startsWith('#')) parts[m[1] as keyof PitfallEntry] = m[2]
  }
  return {symptom: parts.symptom ?? '', cause: parts.cause ?? '', fix: parts.fix ?? ''}
}

async function lastFailure(dir: string, recipe: string, env: NodeJS.ProcessEnv): Promise<FailureRecord> {
  const failure = (await readLadderState(dir, env)).lastFailure
  if (failure) return failure
  throw new GymError(`no failed check is recorded for ${recipe}`, {
    code: 'E_NO_FAILURE',
    exit: ExitCode.precondition,
    hint: `Climb the ladder first (gymrecipe verify ${recipe} --level <rung>), or give the entry with --symptom, --cause and --fix.`,
  })
}

export async function addPitfall(o: PitfallAddOptions): Promise<PitfallAddResult> {
  const target = await resolveRecipe(o.relaxRoot, o.recipe)
  const file = path.join(target.dir, target.files.pitfall ?? 'PITFAIL.md')
  // What is recorded in the recipe never carries a secret from the environment.
  const redact = new Redactor(o.env)
  const failure = o.fromLastFailure ? await lastFailure(target.dir, target.id, o.env) : undefined
  const draft = failure ? draftFromFailure(failure, target.id, redact) : undefined
  if (!draft && (o.symptom === undefined || o.cause === undefined || o.fix === undefined)) {
    const missing = (['symptom', 'cause', 'fix'] as const).filter((k) => o[k] === undefined).map((k) => `--${k}`)
    throw usageError(`missing ${missing.join(', ')}`, 'Give all three (--symptom, --cause, --fix), or draft them with --from-last-failure.')
  }
  let entry: PitfallEntry = {symptom: o.symptom ?? draft!.symptom, cause: o.cause ?? draft!.cause, fix: o.fix ?? draft!.fix}
  if (o.edit) entry = parseEdited(await editText(editable(entry), o.env, 'PITFAIL-entry.txt'))
  entry = {symptom: redact.text(entry.symptom.trim()), cause: redact.text(entry.cause.trim()), fix: redact.text(entry.fix.trim())}
  const parts = (['symptom', 'cause', 'fix'] as const).filter((k) => partProblem(k, entry[k]))
  if (parts.length > 0) {
    const problems = parts.map((k) => partProblem(k, entry[k]))
    throw usageError(`cannot record this entry: ${problems.join('; ')}`, 'One concise line each: what you saw, why it happened, what fixed it.', {field: `--${parts[0]}`})
  }

  // Only a missing PITFAIL.md starts afresh: one that cannot be read is never written over.
  const read = (await readTextIfExists(file)) ?? null
  const text = read ?? `# ${target.id} 踩坑记录 (PITFAIL)\n\nKnown failures for this recipe, one per entry: symptom → cause → fix.\n`
  const entries = entriesOf(text)
  const same = entries.find((e) => symptomKey(e.symptom) === symptomKey(entry.symptom))
  if (same) {
    throw new GymError(`this symptom is already entry ${same.number}: ${same.symptom}`, {
      code: 'E_PITFALL_DUPLICATE',
      exit: ExitCode.precondition,
      hint: `Extend entry ${same.number} by hand if the cause or fix is new, or describe a different symptom.`,
      location: {file, line: same.line},
    })
  }
  const number = Math.max(0, ...entries.map((e) => e.number)) + 1
  const line = entryLine(number, entry)
  const drafted = draft !== undefined && !(o.symptom !== undefined && o.cause !== undefined && o.fix !== undefined)
  if (drafted && !o.edit && !o.accepted && !o.dryRun) {
    throw new GymError(`the drafted entry was not accepted:\n  ${line}`, {
      code: 'E_DRAFT_NOT_ACCEPTED',
      exit: ExitCode.usage,
      hint: 'Accept it with --yes, review it with --edit (opens $EDITOR), or replace parts with --symptom/--cause/--fix.',
      details: {draft: line},
    })
  }
  if (!o.dryRun) await writeFileAtomic(file, appendEntry(text, target.id, line), undefined, {unchangedFrom: read})
  return {recipe: target.id, file, number, entry, line, dryRun: o.dryRun, from: failure ? {rung: failure.rung, check: failure.id, at: failure.at} : null}
}

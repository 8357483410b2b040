/**
 * `gymrecipe handoff`: what the next person needs to run the recipe without gymrecipe — the three
 * bare commands from the Relax root and the environment they read, the data and checkpoint paths —
 * and every rung that has not passed on the inputs of now, each with the command that checks it.
 */
import {promises as fsp} from 'node:fs'
import path from 'node:path'

import {checkContext, dataPlan, ladderStanding, recipeFiles, saveDirOf, scriptEnv, type CheckContext, type RungStanding} from '../ladder/index.js'
import {launcherRole, type LoadedFile} from '../recipe/files.js'
import {flagValues, type LogicalLine, resolveWord} from '../recipe/shell.js'
import {resolveRecipe} from '../recipe/target.js'
import {messageOf} from '../errors.js'
import {Redactor} from '../redact.js'
import {readTextIfExists, writeFileAtomic} from '../runtime/fs.js'
import {regionBody, REGIONS, beginMarker, endMarker, withRegionBody} from '../scaffold/regions.js'
import {shellWord} from '../shell-words.js'

export interface HandoffOptions {
  relaxRoot: string
  recipe: string
  env: NodeJS.ProcessEnv
  /** Put the hand-off in README.md's hand-off section. */
  write: boolean
  dryRun: boolean
}

export interface BareCommand {
  step: 'prepare' | 'start' | 'train'
  /** Run from the Relax root. */
  shell: string
  /** How it must be run when not plainly on this host (e.g. inside the Gym image). */
  note: string | null
}

export interface RequiredVariable {
  name: string
  /** Where a script requires it. */
  script: string
  set: boolean
}

export interface HandoffReport {
  recipe: string
  dir: string
  relaxRoot: string
  commands: BareCommand[]
  env: {file: string | null; required: RequiredVariable[]; error: string | null}
  data: {path: string | null; exists: boolean}
  checkpoints: string | null
  rungs: RungStanding[]
  /** Every rung not passed on current inputs, with the command that would check it. */
  unverified: Array<RungStanding & {command: string}>
  /** README.md, when --write put the hand-off there. */
  written: string | null
}

const rel = (report: {relaxRoot: string}, file: string) => path.relative(report.relaxRoot, file)

/** Variables a script stops on when unset (`: "${NAME:?…}"`), except those its launcher provides. */
function requiredNames(file: LoadedFile): string[] {
  const out: string[] = []
  for (const m of file.text.matchAll(/\$\{([A-Za-z_]\w*):\?([^}]*)\}/g)) {
    if (/\bset by\b/i.test(m[2])) continue
    if (!out.includes(m[1])) out.push(m[1])
  }
  return out
}

/** The host-side launcher when the recipe has one (it creates the container), else its start script. */
function startCommand(launchers: LoadedFile[], primary: LoadedFile | undefined, report: {relaxRoot: string}): {command: BareCommand; file: LoadedFile} | undefined {
  const host = launchers.find((l) => launcherRole(l).createsContainer) ?? primary
  if (!host) return undefined
  const inContainer = !launcherRole(host).createsContainer
  const note = inContainer ? 'an in-container launcher: run it inside the Gym image with host networking (the recipe has no host-side launcher)' : null
  return {command: {step: 'start', shell: `bash ${shellWord(rel(report, host.path))}`, note}, file: host}
}

function prepareCommand(prepare: LoadedFile | undefined, report: {relaxRoot: string}): BareCommand | undefined {
  if (!prepare) return undefined
  const callsDocker = prepare.lines.some((l) => /\bdocker\s+(?:run|exec|build|create)\b/.test(l.text))
  return {step: 'prepare', shell: `bash ${shellWord(rel(report, prepare.path))}`, note: callsDocker ? null : 'it calls no docker itself: run it inside the Gym image, with the data folder mounted at the same path'}
}

/** `--save` of the training script, expanded as the script would with this environment. */
function checkpointDir(run: LoadedFile, env: Record<string, string>, relaxRoot: string): string | null {
  const save = flagValues(run.lines, '--save')[0]
  if (!save) return null
  const known: LogicalLine[] = Object.entries({...env, PWD: relaxRoot})
    .filter(([name]) => /^[A-Za-z_]\w*$/.test(name))
    .map(([name, value]) => ({line: 0, text: `${name}='${value.replaceAll("'", '')}'`}))
  const resolved = resolveWord(save.value, [...known, ...run.lines])
  return resolved.value ? path.resolve(relaxRoot, resolved.value) : null
}

export async function recipeHandoff(o: HandoffOptions): Promise<HandoffReport> {
  const target = await resolveRecipe(o.relaxRoot, o.recipe)
  const ctx: CheckContext = checkContext(target, {env: o.env, smoke: false})
  const files = await recipeFiles(ctx)
  const base = {relaxRoot: target.relaxRoot}

  let env: Record<string, string> = {}
  let envError: string | null = null
  try {
    env = await scriptEnv(ctx)
  } catch (error) {
    envError = messageOf(error)
  }
  const commands: BareCommand[] = []
  const prepare = prepareCommand(files.byRole.prepare, base)
  if (prepare) commands.push(prepare)
  const start = startCommand(files.launchers, files.byRole.start, base)
  if (start) commands.push(start.command)
  const run = files.byRole.run
  if (run) {
    const entrypoint = path.join(target.relaxRoot, 'scripts', 'entrypoint', 'ray-job.sh')
    const viaEntrypoint = await fsp.stat(entrypoint).then((s) => s.isFile(), () => false)
    commands.push({
      step: 'train',
      shell: viaEntrypoint ? `bash scripts/entrypoint/ray-job.sh ${shellWord(rel(base, run.path))}` : `bash ${shellWord(rel(base, run.path))}`,
      note: viaEntrypoint ? null : `${rel(base, entrypoint)} is not in this checkout: the script needs the runtime environment that launcher sets`,
    })
  }

  const required: RequiredVariable[] = []
  for (const file of [files.byRole.prepare, start?.file, run]) {
    if (!file) continue
    for (const name of requiredNames(file)) if (!required.some((r) => r.name === name)) required.push({name, script: file.name, set: Boolean(env[name]?.trim())})
  }

  const plan = envError ? undefined : await dataPlan(ctx).catch(() => undefined)
  const checkpoints = envError ? null : target.contract ? saveDirOf(target.contract, env, target.relaxRoot).saveDir : run ? checkpointDir(run, env, target.relaxRoot) : null
  const standing = await ladderStanding(ctx)
  const root = shellWord(target.relaxRoot)
  const unverified = standing.rungs
    .filter((r) => r.status !== 'passed')
    .map((r) => ({...r, command: `gymrecipe verify ${shellWord(target.id)} --level ${r.rung} --relax-root ${root}`}))

  const report: HandoffReport = {
    recipe: target.id,
    dir: target.dir,
    relaxRoot: target.relaxRoot,
    commands,
    env: {file: files.byRole.env?.path ?? null, required, error: envError},
    data: {path: plan?.file ?? null, exists: Boolean(plan?.stat?.isFile)},
    checkpoints: checkpoints ? `${checkpoints.replace(/\/$/, '')}/` : null,
    rungs: standing.rungs,
    unverified,
    written: null,
  }
  if (o.write) report.written = await writeHandoff(report, target.files.readme ?? 'README.md', o)
  return report
}

export function handoffLines(report: HandoffReport): string[] {
  const lines = [`${report.recipe} hand-off: run from ${report.relaxRoot}${report.env.file ? `, after filling in ${rel(report, report.env.file)} (every script sources it)` : ''}:`]
  report.commands.forEach((c, i) => {
    lines.push(`  ${i + 1}. ${c.shell}`)
    if (c.note) lines.push(`     (${c.note})`)
  })
  if (report.commands.length < 3) lines.push(`  (missing: ${['prepare', 'start', 'train'].filter((s) => !report.commands.some((c) => c.step === s)).join(', ')} script)`)
  if (report.env.error) lines.push(`  env: ${report.env.error}`)
  else if (report.env.required.length > 0) {
    const unset = report.env.required.filter((r) => !r.set).map((r) => r.name)
    lines.push(`  env they read: ${report.env.required.map((r) => r.name).join(', ')}${unset.length > 0 ? `; still unset: ${unset.join(', ')}` : '; all set'}`)
  }
  lines.push(`data:        ${report.data.path ?? 'unknown (NEMO_GYM_SOURCE_DATA is unset or relative)'}${report.data.path && !report.data.exists ? ' (not there yet: step 1 writes it)' : ''}`)
  lines.push(`checkpoints: ${report.checkpoints ?? 'unknown (the training script passes no --save this environment resolves)'}`)
  if (report.unverified.length === 0) {
    lines.push('every rung has passed on current inputs')
  } else {
    lines.push('not passed on current inputs:')
    for (const r of report.unverified) lines.push(`  ${r.rung.padEnd(9)}${standingWords(r)}`, `           ${r.command}`)
    const passed = report.rungs.filter((r) => r.status === 'passed').map((r) => r.rung)
    if (passed.length > 0) lines.push(`passed on current inputs: ${passed.join(', ')}`)
  }
  return lines
}

/** "never checked", "failed when last checked (…)", "stale: the data file changed since it passed (…)". */
function standingWords(r: RungStanding): string {
  if (r.status === 'never') return 'never checked'
  if (r.status === 'failed' || r.status === 'incomplete') return `${r.status === 'failed' ? 'failed' : 'not fully checked'} when last checked (${r.at})`
  return `${r.status}: ${r.reason} (${r.at})`
}

function handoffMarkdown(report: HandoffReport): string {
  const out = [`Recorded ${new Date().toISOString().slice(0, 10)} by \`gymrecipe handoff\`. From the Relax root, after filling in \`env.sh\`:`, '', '```bash']
  for (const c of report.commands) out.push(c.note ? `${c.shell}   # ${c.note}` : c.shell)
  out.push('```', '', `- Data: \`${report.data.path ?? 'unknown'}\``, `- Checkpoints: \`${report.checkpoints ?? 'unknown'}\``)
  if (report.unverified.length === 0) out.push('- Every rung has passed on the inputs of this hand-off.')
  else {
    out.push('- Not passed on the inputs of this hand-off:')
    for (const r of report.unverified) out.push(`  - ${r.rung}: ${standingWords(r)}; check with \`${r.command}\``)
  }
  return `${out.join('\n')}\n`
}

async function writeHandoff(report: HandoffReport, readmeName: string, o: HandoffOptions): Promise<string> {
  const file = path.join(report.dir, readmeName)
  // Only a missing README starts afresh: one that cannot be read is never written over.
  const read = (await readTextIfExists(file)) ?? null
  const text = read ?? `# ${report.recipe}\n`
  const withSection =
    regionBody(text, REGIONS.handoff) === undefined
      ? `${text.replace(/\n*$/, '')}\n\n## Hand-off\n\n${beginMarker(REGIONS.handoff, `written by \`gymrecipe handoff ${report.recipe} --write\`; regeneration keeps it`)}\n${endMarker(REGIONS.handoff)}\n`
      : text
  // A secret that reached the environment never reaches the recipe's README.
  const body = new Redactor(o.env).text(handoffMarkdown(report))
  if (!o.dryRun) await writeFileAtomic(file, withRegionBody(withSection, REGIONS.handoff, body), undefined, {unchangedFrom: read})
  return file
}

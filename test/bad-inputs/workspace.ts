/**
 * The world a bad-input case runs in, and the checks that nothing outside a command's declared
 * outputs changed: a template workspace (a Relax checkout with a generated recipe, rows, a spec,
 * bundles, tasks, rollouts, a call config, a symlink) copied per case, hashed before and after.
 */
import {execa} from 'execa'
import {createHash} from 'node:crypto'
import {cp, lstat, mkdir, mkdtemp, readdir, readFile, readlink, stat, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {newRecipe} from '../../src/scaffold/new-recipe.js'
import {addModelConfigs} from '../helpers/recipes.js'
import {repoRoot, runCli, snapshotRoot} from '../helpers/cli.js'

export const CALENDAR_CONFIG = 'environments/calendar/config.yaml'

/** Secrets planted in every case's environment; none may reach any output. */
export const PLANTED = {
  HF_TOKEN: 'hf_PlantedToken123456',
  WANDB_API_KEY: 'wandbPlantedKey987654',
  RAY_JOB_HEADERS: JSON.stringify({Authorization: 'Bearer rayPlantedBearer5555'}),
  RAY_DASHBOARD_ADDRESS: 'http://corpususer:PlantedPw4242@127.0.0.1:9',
  OPENAI_API_KEY: 'sk-PlantedOpenAI31337',
}
export const PLANTED_NEEDLES = ['PlantedToken123456', 'PlantedKey987654', 'PlantedBearer5555', 'PlantedPw4242', 'PlantedOpenAI31337']

/**
 * A secret as it may be echoed: as written, JSON-\\u-escaped, percent-encoded, and the base64
 * text it produces at each alignment inside a longer encoded string.
 */
export function needleForms(needle: string): string[] {
  const forms = new Set([needle, encodeURIComponent(needle), [...needle].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')])
  const bytes = Buffer.from(needle)
  for (let skip = 0; skip < 3; skip++) {
    const whole = bytes.subarray(skip, skip + Math.floor((bytes.length - skip) / 3) * 3)
    if (whole.length >= 9) forms.add(whole.toString('base64'))
  }
  return [...forms]
}

export interface Template {
  dir: string
  recipe: string
}

/** Build the template once: every path a case refers to with {ws} exists here. */
export async function buildTemplate(recipe: string): Promise<Template> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gr-corpus-template-'))
  const relax = path.join(dir, 'relax')
  await mkdir(relax)
  await addModelConfigs(relax)
  await newRecipe({id: recipe, gymRoot: snapshotRoot, gymConfigs: [CALENDAR_CONFIG], relaxRoot: relax, from: 'calendar', smoke: false, force: false, dryRun: false, version: 'corpus'})
  await cp(path.join(repoRoot, 'test/fixtures/tasks/seed-rows.jsonl'), path.join(dir, 'rows.jsonl'))
  await cp(path.join(repoRoot, 'test/fixtures/tasks/workplace-declarative.yaml'), path.join(dir, 'spec.yaml'))
  const build = await runCli(['tasks', 'build', path.join(dir, 'rows.jsonl'), '--spec', path.join(dir, 'spec.yaml'), '-o', path.join(dir, 'bundles.jsonl')])
  if (build.exitCode !== 0) throw new Error(`template: tasks build failed: ${build.stderr}`)
  const exported = await runCli(['tasks', 'export', path.join(dir, 'bundles.jsonl'), '-o', path.join(dir, 'tasks.jsonl')])
  if (exported.exitCode !== 0) throw new Error(`template: tasks export failed: ${exported.stderr}`)
  // The index as written: 60-bit indices do not survive JSON.parse.
  const index = /"_ng_task_index":\s*(\d+)/.exec(await readFile(path.join(dir, 'tasks.jsonl'), 'utf8'))?.[1]
  if (!index) throw new Error('template: the exported task has no _ng_task_index')
  await writeFile(path.join(dir, 'rollouts.jsonl'), `{"_ng_task_index":${index},"reward":1,"response":{"output":[]}}\n`)
  await writeFile(path.join(dir, 'call.yaml'), 'name: verdict\nendpoint: http://127.0.0.1:9\nroute: /verify\nrow_id_column: id\nrequest_columns: {question: q}\n')
  await writeFile(path.join(dir, 'call-rows.jsonl'), '{"id":"a","q":"one"}\n{"id":"b","q":"two"}\n')
  await execa('ln', ['-s', 'rows.jsonl', path.join(dir, 'rows-link.jsonl')])
  return {dir, recipe}
}

export async function copyTemplate(template: Template, name: string): Promise<string> {
  const dir = path.join(os.tmpdir(), `gr-corpus-${process.pid}-${name}`)
  await cp(template.dir, dir, {recursive: true, verbatimSymlinks: true})
  return dir
}

export type Entry = {kind: 'file'; sha256: string; mode: number} | {kind: 'link'; target: string} | {kind: 'dir'; mode: number} | {kind: 'other'}

/** Every entry under dir (symlinks not followed), by relative path. */
export async function snapshot(dir: string): Promise<Map<string, Entry>> {
  const out = new Map<string, Entry>()
  const walk = async (at: string) => {
    for (const name of await readdir(at)) {
      const p = path.join(at, name)
      const rel = path.relative(dir, p)
      const s = await lstat(p)
      if (s.isSymbolicLink()) out.set(rel, {kind: 'link', target: await readlink(p)})
      else if (s.isDirectory()) {
        out.set(rel, {kind: 'dir', mode: s.mode})
        await walk(p)
      } else if (s.isFile()) out.set(rel, {kind: 'file', sha256: createHash('sha256').update(await readFile(p)).digest('hex'), mode: s.mode})
      else out.set(rel, {kind: 'other'})
    }
  }
  await walk(dir)
  return out
}

const within = (rel: string, declared: readonly string[]) => declared.some((d) => rel === d || rel.startsWith(`${d}/`) || d.startsWith(`${rel}/`))

/** What changed outside the declared outputs: created, removed or altered entries. */
export function undeclaredChanges(before: Map<string, Entry>, after: Map<string, Entry>, declared: readonly string[]): string[] {
  const changes: string[] = []
  for (const [rel, entry] of after) {
    if (within(rel, declared)) continue
    const was = before.get(rel)
    if (!was) changes.push(`created ${rel}`)
    else if (JSON.stringify(was) !== JSON.stringify(entry)) changes.push(`changed ${rel} (${was.kind} → ${entry.kind})`)
  }
  for (const rel of before.keys()) if (!after.has(rel) && !within(rel, declared)) changes.push(`removed ${rel}`)
  return changes
}

/** Text of every file under dir that is new or changed since before (for the secret scan). */
export async function touchedText(dir: string, before: Map<string, Entry>, after: Map<string, Entry>): Promise<string> {
  const parts: string[] = []
  for (const [rel, entry] of after) {
    if (entry.kind !== 'file') continue
    const was = before.get(rel)
    if (was && JSON.stringify(was) === JSON.stringify(entry)) continue
    parts.push(await readFile(path.join(dir, rel), 'utf8'))
  }
  return parts.join('\n')
}

/** Processes still alive that carry this case's marker in their environment (zombies excluded). */
export async function processesWithMarker(marker: string): Promise<number[]> {
  const found: number[] = []
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue
    const environ = await readFile(`/proc/${name}/environ`, 'latin1').catch(() => '')
    if (!environ.includes(marker)) continue
    const statText = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '')
    const state = statText.slice(statText.lastIndexOf(')') + 2, statText.lastIndexOf(')') + 3)
    if (state !== 'Z' && state !== 'X' && state !== '') found.push(Number(name))
  }
  return found
}

export async function isCharacterDevice(p: string): Promise<boolean> {
  return (await stat(p).catch(() => undefined))?.isCharacterDevice() ?? false
}

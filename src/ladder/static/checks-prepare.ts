/** The prepare script: it publishes the raw file the training reads and guards its source path (probed with a fake docker). */
import {chmod, copyFile, mkdir, mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {run} from '../../runtime/process.js'
import type {Check, CheckOutcome, NamedResult} from '../types.js'
import {recipeFiles} from './recipe-files.js'
import type {LoadedFile} from '../../recipe/files.js'
import type {CheckRun} from './run-script.js'
import {assignments} from '../../recipe/shell.js'

// ------------------------------------------------------------------ prepare script

/**
 * The raw file name the recipe expects: the contract's, else the prepare script's own guard
 * (e.g. "must end with /calendar_train.jsonl"), else env.sh's default path.
 */
export function expectedRawFilename(ctx: CheckRun, prepare: LoadedFile, env: LoadedFile | undefined): {name: string; from: string} | undefined {
  if (ctx.target.contract) return {name: ctx.target.contract.data.raw_filename, from: 'recipe.yaml'}
  const guard = prepare.lines.find((l) => /NEMO_GYM_SOURCE_DATA|EXPECTED\w*=|must (?:end|match)/.test(l.text) && /\/[A-Za-z0-9_.-]+\.jsonl\b/.test(l.text))
  const fromGuard = guard?.text.match(/\/([A-Za-z0-9_.-]+\.jsonl)\b/)?.[1]
  if (fromGuard && !fromGuard.endsWith('_relax.jsonl')) return {name: fromGuard, from: `${prepare.name}:${guard!.line}`}
  const source = env && assignments(env.lines).find((a) => a.name === 'NEMO_GYM_SOURCE_DATA')
  const fromEnv = source?.value.match(/([A-Za-z0-9_.-]+\.jsonl)/)?.[1]
  return fromEnv ? {name: fromEnv, from: `${env!.name}:${source!.line}`} : undefined
}

const FAKE_DOCKER = `#!/usr/bin/env bash
printf '%s\\n' "$*" >> "$GYMRECIPE_FAKE_DOCKER_LOG"
exit 0
`

/**
 * Run each prepare script's host side with a recording fake `docker` first on PATH and an empty
 * env.sh: bad NEMO_GYM_SOURCE_DATA values must stop it before any container runs, the right one must not.
 */
export const prepareGuardsSourcePath: Check = {
  id: 'static.prepare-source-path',
  title: 'prepare requires an absolute NEMO_GYM_SOURCE_DATA ending in the raw filename',
  async run(ctx) {
    const files = await recipeFiles(ctx)
    if (files.prepare.length === 0) return {status: 'fail', message: 'no prepare script (prepare_*.sh) in the recipe folder'}
    const out: NamedResult[] = []
    const add = (prepare: LoadedFile, o: CheckOutcome) => out.push({id: this.id, title: this.title, file: prepare.name, ...o})
    for (const prepare of files.prepare) {
      if (!/\bNEMO_GYM_SOURCE_DATA\b/.test(prepare.text)) {
        add(prepare, {status: 'fail', message: `${prepare.name} never reads NEMO_GYM_SOURCE_DATA: it writes wherever its own defaults say, so nothing ties the prepared file to the path training reads`, hint: 'Take the destination from NEMO_GYM_SOURCE_DATA (absolute, ending in the raw file name) and refuse anything else before starting a container.'})
        continue
      }
      const overridden = assignments(prepare.lines).find((a) => a.name === 'NEMO_GYM_SOURCE_DATA' && !/\$\{NEMO_GYM_SOURCE_DATA\b/.test(a.value))
      if (overridden) {
        add(prepare, {status: 'fail', message: `${prepare.name} sets NEMO_GYM_SOURCE_DATA itself at line ${overridden.line} (${overridden.value.slice(0, 80)}), ignoring the path it is given`, line: overridden.line, hint: 'Read NEMO_GYM_SOURCE_DATA from the caller (env.sh) and refuse a path that is not absolute or does not end in the raw file name.'})
        continue
      }
      const raw = expectedRawFilename(ctx, prepare, files.byRole.env)
      if (!raw) {
        add(prepare, {status: 'skip', message: 'not checked: the expected raw file name is not written in the prepare script or env.sh', hint: 'Name it in the guard, e.g. "NEMO_GYM_SOURCE_DATA must end with /<name>.jsonl".'})
        continue
      }
      const problems = await probePrepare(prepare, raw.name)
      if (problems.length === 0) add(prepare, {status: 'pass', message: `rejects relative, renamed and *_relax.jsonl paths; accepts /.../${raw.name} (name from ${raw.from})`})
      for (const p of problems) add(prepare, p)
    }
    return out
  },
}

async function probePrepare(prepare: LoadedFile, raw: string): Promise<CheckOutcome[]> {
  const sandbox = await mkdtemp(path.join(os.tmpdir(), 'gymrecipe-prepare-'))
  try {
    await copyFile(prepare.path, path.join(sandbox, prepare.name))
    await writeFile(path.join(sandbox, 'env.sh'), '# emptied for the static check\n')
    // A recipe that trains on the user's own file reads it too: give it one, so only the
    // NEMO_GYM_SOURCE_DATA guard decides.
    await writeFile(path.join(sandbox, 'tasks.jsonl'), '{}\n')
    const bin = path.join(sandbox, 'bin')
    await mkdir(bin)
    await writeFile(path.join(bin, 'docker'), FAKE_DOCKER)
    await chmod(path.join(bin, 'docker'), 0o755)
    const attempt = async (value: string) => {
      const log = path.join(sandbox, `docker-${Math.random().toString(16).slice(2)}.log`)
      const r = await run('bash', [path.join(sandbox, prepare.name)], {
        timeout: 20_000,
        cwd: sandbox,
        env: {PATH: `${bin}:${process.env.PATH}`, NEMO_GYM_SOURCE_DATA: value, NEMO_GYM_TASK_DATA: path.join(sandbox, 'tasks.jsonl'), NEMO_GYM_IMAGE: 'gymrecipe-static-check:none', GYMRECIPE_FAKE_DOCKER_LOG: log, HOME: sandbox},
        extendEnv: false,
      })
      const calls = (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean)
      return {exitCode: r.exitCode ?? -1, ranContainer: calls.some((c) => /^(run|create|container (run|create))\b/.test(c)), stderr: r.stderr}
    }
    const data = path.join(sandbox, 'shared')
    const bad: Array<[string, string]> = [
      ['a relative path', `data/${raw}`],
      ['a different file name', path.join(data, `other_${raw}`)],
      ['the converted preview', path.join(data, raw.replace(/\.jsonl$/, '_relax.jsonl'))],
    ]
    const problems: CheckOutcome[] = []
    for (const [label, value] of bad) {
      const r = await attempt(value)
      if (r.exitCode === 0 || r.ranContainer) problems.push({status: 'fail', message: `accepted ${label} (${value}) as NEMO_GYM_SOURCE_DATA`, hint: `Require an absolute path ending in /${raw} before starting any container.`})
    }
    const good = await attempt(path.join(data, raw))
    if (!good.ranContainer) problems.push({status: 'fail', message: `rejected the valid path ${path.join(data, raw)}: ${good.stderr.trim().split('\n').at(-1) ?? ''}`})
    return problems
  } finally {
    await rm(sandbox, {recursive: true, force: true})
  }
}

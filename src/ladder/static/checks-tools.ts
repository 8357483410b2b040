import {mkdtemp, rm} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {run} from '../../runtime/process.js'
import type {Check, NamedResult} from '../types.js'
import {recipeFiles} from './recipe-files.js'



export const bashSyntax: Check = {
  id: 'static.bash-n',
  title: 'bash -n accepts the shell scripts',
  async run(ctx) {
    const files = (await recipeFiles(ctx)).shell
    const out: NamedResult[] = []
    for (const f of files) {
      const r = await run('bash', ['-n', f.path], {timeout: 20_000})
      if (r.notFound) return {status: 'skip', message: 'bash not found', hint: 'apt-get install -y bash'}
      const line = Number(r.stderr.match(/line (\d+)/)?.[1]) || undefined
      out.push(r.failed
        ? {id: 'static.bash-n', title: `bash -n ${f.name}`, status: 'fail', message: r.stderr.trim().split('\n')[0] || `exit ${r.exitCode}`, file: f.name, line}
        : {id: 'static.bash-n', title: `bash -n ${f.name}`, status: 'pass', message: 'syntax ok', file: f.name})
    }
    return out.length > 0 ? out : {status: 'fail', message: 'no shell scripts found'}
  },
}

interface ShellcheckComment {
  file: string
  line: number
  level: string
  code: number
  message: string
}

export const shellcheck: Check = {
  id: 'static.shellcheck',
  title: 'shellcheck passes on the shell scripts',
  async run(ctx) {
    const files = (await recipeFiles(ctx)).shell
    const out: NamedResult[] = []
    for (const f of files) {
      // -x with SCRIPTDIR follows `source env.sh` next to the script; warnings and errors fail.
      const r = await run('shellcheck', ['-x', '-P', 'SCRIPTDIR', '--severity=warning', '-f', 'json1', f.name], {cwd: ctx.target.dir, timeout: 60_000})
      if (r.notFound) return {status: 'skip', message: 'shellcheck not found, scripts not linted', hint: 'apt-get install -y shellcheck'}
      let comments: ShellcheckComment[]
      try {
        comments = (JSON.parse(r.stdout || '{"comments":[]}').comments ?? []) as ShellcheckComment[]
      } catch {
        out.push({id: 'static.shellcheck', title: `shellcheck ${f.name}`, status: 'fail', message: `shellcheck failed: ${r.stderr.trim() || r.stdout.trim()}`, file: f.name})
        continue
      }
      if (comments.length === 0) {
        out.push({id: 'static.shellcheck', title: `shellcheck ${f.name}`, status: 'pass', message: 'clean', file: f.name})
        continue
      }
      for (const c of comments) {
        out.push({id: 'static.shellcheck', title: `shellcheck ${f.name}`, status: 'fail', message: `SC${c.code} (${c.level}): ${c.message}`, file: c.file, line: c.line, hint: `https://www.shellcheck.net/wiki/SC${c.code}`})
      }
    }
    return out.length > 0 ? out : {status: 'fail', message: 'no shell scripts found'}
  },
}

const STDLIB_PROBE = `
import ast, sys
tree = ast.parse(open(sys.argv[1], encoding="utf-8").read(), sys.argv[1])
for node in ast.walk(tree):
    names = []
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        names = [node.module]
    for name in names:
        if name.split(".")[0] not in sys.stdlib_module_names:
            print(f"{node.lineno}:{name}")
`

export const pyCompile: Check = {
  id: 'static.py-compile',
  title: 'the verifiers compile (generated ones use the standard library only)',
  async run(ctx) {
    const {verifiers} = await recipeFiles(ctx)
    if (verifiers.length === 0) return {status: 'fail', message: 'no verify_*.py in the recipe folder'}
    const generated = ctx.target.contract ? ctx.target.files.verify : undefined
    const out: NamedResult[] = []
    const scratch = await mkdtemp(path.join(os.tmpdir(), 'gymrecipe-pyc-'))
    try {
      for (const verify of verifiers) {
        const result = (r: Omit<NamedResult, 'id' | 'title' | 'file'>) => out.push({id: 'static.py-compile', title: `python3 -m py_compile ${verify.name}`, file: verify.name, ...r})
        // Compile to a scratch file so no __pycache__ lands in the recipe folder.
        const compiled = await run('python3', ['-c', 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)', verify.path, path.join(scratch, 'verify.pyc')], {timeout: 30_000})
        if (compiled.notFound) return {status: 'skip', message: 'python3 not found, verifiers not compiled', hint: 'apt-get install -y python3'}
        if (compiled.failed) {
          const line = Number(compiled.stderr.match(/line (\d+)/)?.[1]) || undefined
          result({status: 'fail', message: `py_compile failed: ${compiled.stderr.trim().split('\n').at(-1)}`, line})
          continue
        }
        const imports = await run('python3', ['-c', STDLIB_PROBE, verify.path], {timeout: 30_000})
        const foreign = imports.stdout.split('\n').filter(Boolean).map((f) => ({line: Number(f.split(':')[0]), name: f.split(':')[1]}))
        const names = [...new Set(foreign.map((f) => f.name))].join(', ')
        if (foreign.length > 0 && verify.name === generated) {
          result({status: 'fail', message: `imports ${names}, which the standard library does not provide`, line: foreign[0].line, hint: `A generated verifier must run with any Gym venv Python; replace ${foreign[0].name} with the standard library (urllib, json).`})
        } else if (foreign.length > 0) {
          // A hand-written verifier runs in the resources server's venv, which has its imports.
          result({status: 'pass', message: `compiles; imports ${names} (third-party: run it with the resources server's venv Python)`})
        } else {
          result({status: 'pass', message: 'compiles; standard library only'})
        }
      }
      return out
    } finally {
      await rm(scratch, {recursive: true, force: true})
    }
  },
}

/**
 * What `npm run build` leaves for the CLI (scripts/bundle.mjs): each command is a bundle that
 * loads nothing from node_modules but the packages deliberately left out, reached through a
 * facade that hands it oclif and the code-cache loader, and the data rung's code, wherever the
 * bundle put it, still starts its workers from the build. (Every other e2e
 * test runs the bundled commands too.)
 */
import {execa} from 'execa'
import {existsSync, readdirSync, readFileSync} from 'node:fs'
import {mkdtemp, open, rm} from 'node:fs/promises'
import {isBuiltin} from 'node:module'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {repoRoot} from '../helpers/cli.js'
import {generatedRecipe} from '../helpers/recipes.js'

const dist = path.join(repoRoot, 'dist')
/** Loaded from node_modules on purpose: native add-ons, a compiler for stale builds, development only. */
const LEFT_OUT = new Set(['dockerode', 'ajv', 'typescript'])

/** Every file under dist/<dir> whose name ends with ext. */
function filesUnder(dir: string, ext: string): string[] {
  return readdirSync(path.join(dist, dir), {recursive: true, encoding: 'utf8'})
    .filter((file) => file.endsWith(ext))
    .map((file) => path.join(dist, dir, file))
}

/** The module names a file imports or requires by a literal name. */
function importedNames(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  const names = [...text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s*(["'])([^"'\n]+)\1;?$/gm), ...text.matchAll(/\b(?:import|require)\((["'])([^"'\n]+)\1\)/g)].map((m) => m[2])
  return [...new Set(names)]
}

/** What each command's facade hands its bundle, by the name the bundle requires. */
const PROVIDED = ['#oclif-core', '#precompiled']

describe('the build', () => {
  it('bundles every command: a bundle requires Node built-ins, its chunks, what its facade hands it and only the packages left out on purpose', () => {
    const facades = filesUnder('commands', '.js')
    const bundles = filesUnder('bundles', '.cjs')
    const chunks = bundles.filter((file) => path.dirname(file) === path.join(dist, 'bundles', 'chunks'))
    expect(facades.length).toBe(17)
    expect(chunks.length).toBeGreaterThan(0)
    expect(
      bundles
        .filter((file) => !chunks.includes(file))
        .map((file) => path.relative(path.join(dist, 'bundles'), file).replace(/\.cjs$/, ''))
        .sort(),
    ).toEqual(facades.map((file) => path.relative(path.join(dist, 'commands'), file).replace(/\.js$/, '')).sort())
    const fromNodeModules = new Set<string>()
    const missing: string[] = []
    for (const file of bundles) {
      for (const name of importedNames(file)) {
        if (isBuiltin(name) || PROVIDED.includes(name)) continue
        if (name.startsWith('.')) {
          if (!name.endsWith('.cjs') || !existsSync(path.resolve(path.dirname(file), name))) missing.push(`${path.relative(dist, file)} → ${name}`)
          continue
        }
        fromNodeModules.add(name.startsWith('@') ? name.split('/').slice(0, 2).join('/') : name.split('/')[0])
      }
      // a script run by loadCommonJs may not import()
      expect(readFileSync(file, 'utf8')).not.toMatch(/\bimport\(/)
    }
    expect(missing).toEqual([])
    expect([...fromNodeModules].filter((name) => !LEFT_OUT.has(name))).toEqual([])
    for (const file of facades) {
      const names = importedNames(file)
      expect(names.filter((name) => name.startsWith('.')).map((name) => existsSync(path.resolve(path.dirname(file), name)))).toEqual([true])
      expect(names.filter((name) => !name.startsWith('.')).sort()).toEqual(['#oclif-core', 'node:url'])
    }
  })

  it('runs oclif from its own bundle, one copy for bin/run.js and the commands, with no import() the loader cannot answer', () => {
    // the commands reach oclif as #oclif-core, which is the module bin/run.js starts
    const packageJson = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8'))
    expect(packageJson.imports['#oclif-core']).toBe('./dist/oclif-core.js')
    expect(readFileSync(path.join(repoRoot, 'bin/run.js'), 'utf8')).toContain("import('../dist/oclif-core.js')")
    const bundles = filesUnder('bundles', '.cjs')
    expect(bundles.some((file) => importedNames(file).includes('#oclif-core'))).toBe(true)
    expect(bundles.some((file) => importedNames(file).some((name) => name.startsWith('@oclif/')))).toBe(false)
    expect(importedNames(path.join(dist, 'oclif-core.js')).sort()).toEqual(['./precompiled.js', 'node:url'])
    const oclif = readFileSync(path.join(dist, 'oclif.cjs'), 'utf8')
    expect(oclif).toContain('await importModule(')
    expect(oclif.match(/\bimport\(\s*[^'"\s)]/g)).toBeNull()
    // oclif's own dependencies are in its bundle too: nothing named is left to import() or require
    expect(oclif).not.toMatch(/importModule\(\s*['"]/)
    expect(importedNames(path.join(dist, 'oclif.cjs')).filter((name) => !isBuiltin(name))).toEqual(['typescript'])
  })

  it('lists the commands in the order oclif would give them, without setting up a collator', async () => {
    // the build sorts command IDs by code point, which is localeCompare's order only for IDs like ours
    const script = `
      const oclif = await import(${JSON.stringify(path.join(dist, 'oclif-core.js'))})
      const config = await oclif.Config.load({root: ${JSON.stringify(repoRoot)}})
      console.log(JSON.stringify(config.plugins.get('gymrecipe').commands.map((command) => command.id)))`
    const r = await execa(process.execPath, ['--input-type=module', '-e', script], {cwd: repoRoot})
    const ids = JSON.parse(r.stdout) as string[]
    expect(ids.length).toBe(17)
    expect(ids).toEqual([...ids].sort((a, b) => a.localeCompare(b)))
    for (const id of ids) expect(id).toMatch(/^[a-z][a-z0-9-]*(:[a-z][a-z0-9-]*)*$/)
    expect(readFileSync(path.join(dist, 'oclif.cjs'), 'utf8')).not.toContain('localeCompare')
  })

  describe('a bundled command', () => {
    let relaxRoot: string
    let data: string

    beforeAll(async () => {
      ;({relaxRoot} = await generatedRecipe('calendar', 'render'))
      data = await mkdtemp(path.join(os.tmpdir(), 'gr-build-data-'))
    }, 120_000)

    afterAll(async () => {
      await rm(relaxRoot, {recursive: true, force: true})
      await rm(data, {recursive: true, force: true})
    })

    it('splits a large data file across the worker threads of the build', async () => {
      const row = '{"responses_create_params":{"input":[{"role":"user","content":"plan my day"}]},"exp_cal_state":{"1":{"event_id":1}}}\n'
      const file = path.join(data, 'render_train.jsonl')
      const handle = await open(file, 'w')
      const block = row.repeat(8192)
      // above the 64 MiB where the data rung starts using workers
      let rows = 0
      for (let written = 0; written < 66 * 1024 * 1024; written += block.length, rows += 8192) await handle.write(block)
      await handle.close()
      const r = await execa(process.execPath, [path.join(repoRoot, 'bin/run.js'), 'verify', 'render', '--relax-root', relaxRoot, '--only', 'data', '--json'], {
        reject: false,
        env: {NEMO_GYM_SOURCE_DATA: file, DOCKER_HOST: 'unix:///nonexistent/docker.sock'},
      })
      const checks = JSON.parse(r.stdout).result.rungs[0].checks as Array<{evidence?: {threads?: number; rows?: number}}>
      const scanned = checks.find((check) => check.evidence?.threads !== undefined)
      expect(scanned?.evidence?.threads).toBe(Math.min(os.availableParallelism(), 4))
      expect(scanned?.evidence?.rows).toBe(rows)
    }, 120_000)
  })
})

/**
 * Runs the bad-input corpus (cases.ts) against the built CLI. For every case: the exit status
 * and first line are the expected ones, no stack trace or raw system error reaches the user,
 * nothing outside the declared outputs changed (files hashed before and after, symlinks and
 * devices intact), no process or container is left behind, and no planted secret appears in the
 * output or in any file the command wrote.
 */
import {execa} from 'execa'
import {randomBytes} from 'node:crypto'
import {appendFile, mkdir, readFile, rm, symlink, writeFile} from 'node:fs/promises'
import os from 'node:os'
import {readFileSync} from 'node:fs'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {OWNERSHIP_LABEL} from '../../src/runtime/docker.js'
import {PROBE_LABEL} from '../../src/runtime/storage-probe.js'
import {camelCaseKeys, repoRoot, snapshotRoot} from '../helpers/cli.js'
import {docker, dockerUnavailableReason} from '../helpers/docker.js'
import {type BadInput, CASES, type Mount} from './cases.js'
import {schemaProblems} from './schemas.js'
import {type Running, startHostile} from './servers.js'
import {buildTemplate, needleForms, copyTemplate, isCharacterDevice, PLANTED, PLANTED_NEEDLES, processesWithMarker, snapshot, type Template, touchedText, undeclaredChanges} from './workspace.js'

const recipe = `corpus-${randomBytes(3).toString('hex')}`
const dockerHere = (await dockerUnavailableReason()) === undefined
let template: Template

beforeAll(async () => {
  template = await buildTemplate(recipe)
}, 120_000)

afterAll(async () => {
  await rm(template.dir, {recursive: true, force: true})
})

const fill = (text: string, ws: string, server?: Running) => {
  const out = text.replaceAll('{ws}', ws).replaceAll('{gym}', snapshotRoot).replaceAll('{recipe}', recipe).replaceAll('{snake}', recipe.replaceAll('-', '_')).replaceAll('{host}', os.hostname())
  return server ? out.replaceAll('{server}', server.url).replaceAll('{port}', String(server.port)).replaceAll('{elsewhere}', server.elsewhere) : out
}

async function plant(ws: string, c: BadInput, server?: Running): Promise<void> {
  for (const [rel, content] of Object.entries(c.files ?? {})) {
    const p = path.join(ws, fill(rel, ws))
    await mkdir(path.dirname(p), {recursive: true})
    if (!(typeof content === 'object' && 'append' in content)) await rm(p, {force: true, recursive: true})
    if (typeof content === 'object' && 'link' in content) await symlink(content.link, p)
    else if (typeof content === 'object' && 'append' in content) await appendFile(p, fill(content.append, ws, server))
    else if (typeof content === 'object' && 'fifo' in content) await execa('mkfifo', [p])
    else await writeFile(p, typeof content === 'string' ? fill(content, ws, server) : content)
  }
  for (const m of c.mounts ?? []) await mkdir(path.join(ws, m.at), {recursive: true})
}

/** A shell line that mounts each tmpfs (inside a private mount namespace) and then runs the CLI. */
function mountScript(ws: string, mounts: Mount[]): string {
  const lines = mounts.flatMap((m) => {
    const at = JSON.stringify(path.join(ws, m.at))
    return [
      `mount -t tmpfs -o size=${m.size} tmpfs ${at}`,
      ...(m.fill ? [`head -c ${m.fill} /dev/zero > ${at}/pad`] : []),
      ...(m.readOnly ? [`mount -o remount,ro ${at}`] : []),
    ]
  })
  return [...lines, 'exec "$@"'].join(' && ')
}

async function leftContainers(): Promise<string[]> {
  if (!dockerHere) return []
  const ids = await Promise.all(
    [`${PROBE_LABEL}=${recipe}`, `${OWNERSHIP_LABEL}=${recipe}`].map(async (label) => (await docker(['ps', '-a', '-q', '--filter', `label=${label}`])).stdout.split('\n').filter(Boolean)),
  )
  return ids.flat()
}

/** The error's first line: of stderr (oclif's marker dropped), of a --json error, else of stdout. */
function firstLine(stdout: string, stderr: string): string {
  try {
    const {error} = JSON.parse(stdout)
    if (error?.code) return `${error.code}: ${String(error.message).split('\n')[0]}`
  } catch {
    // not a JSON document
  }
  const source = stderr.trim() === '' ? stdout : stderr
  return (source.split('\n').find((l) => l.trim() !== '') ?? '').replace(/^\s*›\s+Error:\s*/, '').trim()
}

interface Outcome {
  /** Requests that reached the listener a redirect pointed at. */
  elsewhereHits: number
  exit: number
  first: string
  stdout: string
  stderr: string
  changes: string[]
  written: string
  processes: number[]
  containers: string[]
  devices: string[]
}

async function run(c: BadInput): Promise<Outcome> {
  const ws = await copyTemplate(template, c.id)
  const server = c.server ? await startHostile(c.server) : undefined
  try {
    await plant(ws, c, server)
    const before = await snapshot(ws)
    const marker = `corpus-${c.id}-${randomBytes(4).toString('hex')}`
    const env = {NO_COLOR: '1', PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: path.join(ws, 'home'), ...(process.env.DOCKER_HOST ? {DOCKER_HOST: process.env.DOCKER_HOST} : {}), ...PLANTED, ...c.secrets, GYMRECIPE_CORPUS_CASE: marker, XDG_STATE_HOME: path.join(ws, '.state'), ...Object.fromEntries(Object.entries(c.env ?? {}).map(([k, v]) => [k, fill(v, ws, server)]))}
    const cli = [process.execPath, path.join(repoRoot, 'bin/run.js'), ...c.args.map((a) => fill(a, ws, server))]
    const [file, ...args] = c.mounts ? ['unshare', ...(process.getuid?.() === 0 ? [] : ['-r']), '-m', 'sh', '-c', mountScript(ws, c.mounts), 'sh', ...cli] : cli
    // A command that does not end within the timeout is killed (SIGKILL): its exit is then not the expected one.
    const subprocess = execa(file, args, {reject: false, cwd: ws, env, extendEnv: false, timeout: 120_000, stripFinalNewline: false, maxBuffer: 256 << 20, input: ''})
    const term = c.sigtermAfterMs === undefined ? undefined : setTimeout(() => subprocess.kill('SIGTERM'), c.sigtermAfterMs)
    const result = await subprocess
    clearTimeout(term)
    const stdout = String(result.stdout)
    const stderr = String(result.stderr)
    const first = firstLine(stdout, stderr)
    let processes = await processesWithMarker(marker)
    for (let i = 0; i < 20 && processes.length > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      processes = await processesWithMarker(marker)
    }
    const after = await snapshot(ws)
    const devices = []
    for (const d of c.devices ?? []) if (!(await isCharacterDevice(d))) devices.push(d)
    return {
      elsewhereHits: server?.elsewhereHits() ?? 0,
      exit: result.exitCode ?? -1,
      first,
      stdout,
      stderr,
      changes: undeclaredChanges(before, after, [...(c.writes ?? []).map((w) => w.replaceAll('{recipe}', recipe)), '.state']),
      written: await touchedText(ws, before, after),
      processes,
      containers: await leftContainers(),
      devices,
    }
  } finally {
    await server?.close()
    await rm(ws, {recursive: true, force: true})
  }
}

const ids = CASES.map((c) => c.id)
it('case ids are unique', () => {
  expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([])
})

describe.concurrent('bad-input corpus', () => {
  it.each(CASES.map((c) => [c.id, c] as const))('%s', async (_id, c) => {
    const o = await run(c)
    const expectedFirst = new RegExp(c.first.source.replaceAll('{recipe}', recipe), c.first.flags)
    expect({exit: o.exit, first: o.first}, `stdout:\n${o.stdout.slice(-3000)}\nstderr:\n${o.stderr.slice(-3000)}`).toEqual({exit: c.exit, first: expect.stringMatching(expectedFirst)})
    if (c.args.includes('--json')) {
      const command = commandOf(c)
      expect(command, 'a --json case names a command').toBeDefined()
      const document = JSON.parse(o.stdout)
      expect(await schemaProblems(command!, document)).toEqual([])
      expect(camelCaseKeys(document), 'keys of a --json document are snake_case').toEqual([])
      // A failure always says why in the envelope, whether the command threw or returned a result.
      if (document.exit_code !== 0) expect(document.error, 'a failing --json envelope carries its error').toMatchObject({code: expect.stringMatching(/^E_[A-Z_]+$/), message: expect.stringMatching(/\S/)})
      else expect(document.error).toBeNull()
    }
    for (const mention of c.mentions ?? []) expect(`${o.stdout}\n${o.stderr}`).toMatch(new RegExp(mention.source.replaceAll('{recipe}', recipe), mention.flags))
    // Clear: no stack trace, no bare system error.
    expect(o.stderr).not.toMatch(/^\s+at .+:\d+:\d+\)?$/m)
    expect(o.stderr).not.toMatch(/^\s*(?:›\s+)?Error: E[A-Z]+: /m)
    expect(o.stderr).not.toMatch(/check crashed|Maximum call stack|heap out of memory|ReferenceError|TypeError/)
    // Nothing half-written, clobbered or left behind.
    expect(o.changes).toEqual([])
    expect(o.devices).toEqual([])
    expect(o.processes).toEqual([])
    expect(o.containers).toEqual([])
    // Nothing leaked, in any form a service or a log may echo it; no redirect was followed.
    expect(o.elsewhereHits, 'requests that followed a redirect').toBe(0)
    for (const needle of [...PLANTED_NEEDLES, ...(c.needles ?? Object.values(c.secrets ?? {}))]) {
      for (const form of needleForms(needle)) {
        expect(o.stdout.includes(form) || o.stderr.includes(form), `${needle} (as ${form}) in the output`).toBe(false)
        expect(o.written.includes(form), `${needle} (as ${form}) in a written file`).toBe(false)
      }
    }
  }, 180_000)
})

/** Every command the CLI has (`tasks build`, `verify`), from the manifest the build writes. */
const COMMANDS: string[] = Object.keys((JSON.parse(readFileSync(path.join(repoRoot, 'oclif.manifest.json'), 'utf8')) as {commands: Record<string, unknown>}).commands).map((id) => id.replaceAll(':', ' '))

/** The command a case runs, read from its arguments: the longest command its first words name. */
function commandOf(c: BadInput): string | undefined {
  const [first, second] = c.args
  return COMMANDS.find((command) => command === `${first} ${second}`) ?? COMMANDS.find((command) => command === first)
}

describe('exit statuses', () => {
  it('every status the corpus expects is in the README table, which matches the code', async () => {
    const {ExitCode} = await import('../../src/errors.js')
    const readme = await readFile(path.join(repoRoot, 'README.md'), 'utf8')
    const section = readme.slice(readme.indexOf('## Exit statuses'), readme.indexOf('\n## ', readme.indexOf('## Exit statuses') + 1))
    const table = [...section.matchAll(/^\| `(\d+)` \| /gm)].map((m) => Number(m[1]))
    expect(table).toEqual(Object.values(ExitCode))
    for (const c of CASES) expect(table, c.id).toContain(c.exit)
  })

  const commands = [...new Set(CASES.map(commandOf).filter((c): c is string => c !== undefined))]
  it.each(commands)('%s --help lists every exit status the corpus sees it use', async (command) => {
    const help = await execa(process.execPath, [path.join(repoRoot, 'bin/run.js'), ...command.split(' '), '--help'], {env: {NO_COLOR: '1'}})
    const block = String(help.stdout).split('EXIT STATUS')[1]?.split(/\n\S/)[0] ?? ''
    const listed = [...block.matchAll(/^\s+(\d+)\s/gm)].map((m) => Number(m[1]))
    const used = [...new Set(CASES.filter((c) => commandOf(c) === command && !c.first.source.startsWith('^Parsing') && !/Nonexistent flag|Missing 1 required|expects a value|following errors|Expected --/.test(c.first.source)).map((c) => c.exit))]
    expect(listed, `EXIT STATUS of ${command}:\n${block}`).toEqual(expect.arrayContaining(used))
  })
})

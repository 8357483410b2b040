import {mkdir, mkdtemp, symlink, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {loadGymGraph} from '../../src/contract/gym-config.js'
import {GymError} from '../../src/errors.js'
import {repoRoot} from '../helpers/cli.js'

const fixtureRoot = path.join(repoRoot, 'test', 'fixtures', 'gym-configs', 'root')

/** The GymError thrown for these configs; fails the test when nothing is thrown. */
async function errorFor(configs: string[], gymRoot = fixtureRoot): Promise<GymError> {
  try {
    await loadGymGraph(gymRoot, configs)
  } catch (error) {
    expect(error).toBeInstanceOf(GymError)
    return error as GymError
  }
  throw new Error(`expected ${configs.join(', ')} to be rejected`)
}

interface Expected {
  reason: string
  file?: string
  line?: number
  pointer?: string
  message: RegExp
}

function expectError(error: GymError, expected: Expected): void {
  expect(error.code).toBe('E_GYM_CONFIG')
  expect(error.exit).toBe(2)
  expect(error.details).toEqual({reason: expected.reason})
  expect(error.message).toMatch(expected.message)
  expect(error.location?.file).toBe(expected.file)
  expect(error.location?.line).toBe(expected.line)
  if (expected.pointer !== undefined) expect(error.location?.pointer).toBe(expected.pointer)
}

describe('loadGymGraph rejects bad input with the file and line', () => {
  const cases: Array<[string, string, Expected]> = [
    ['an include cycle', 'cycle/a.yaml', {reason: 'include-cycle', file: 'cycle/b.yaml', line: 2, message: /config_paths cycle: cycle\/a\.yaml -> cycle\/b\.yaml -> cycle\/a\.yaml/}],
    ['a config including itself', 'cycle/self.yaml', {reason: 'include-cycle', file: 'cycle/self.yaml', line: 2, message: /cycle\/self\.yaml -> cycle\/self\.yaml/}],
    [
      'a missing include (names the including file)',
      'errors/missing-include.yaml',
      {reason: 'not-found', file: 'errors/missing-include.yaml', line: 3, message: /'resources_servers\/nothing\/configs\/nothing\.yaml' in errors\/missing-include\.yaml was not found/},
    ],
    ['invalid YAML', 'errors/invalid-yaml.yaml', {reason: 'yaml', file: 'errors/invalid-yaml.yaml', line: 6, message: /^invalid YAML: /}],
    ['invalid YAML in an included file (names that file)', 'errors/includes-invalid.yaml', {reason: 'yaml', file: 'errors/invalid-yaml.yaml', line: 6, message: /^invalid YAML: /}],
    ['a duplicate key', 'errors/duplicate-key.yaml', {reason: 'yaml', file: 'errors/duplicate-key.yaml', line: 6, message: /Map keys must be unique/}],
    ['a top level that is not a mapping', 'errors/not-a-mapping.yaml', {reason: 'not-a-mapping', file: 'errors/not-a-mapping.yaml', line: 1, message: /must be a mapping/}],
    ['config_paths that is not a list', 'errors/config-paths-not-list.yaml', {reason: 'config-paths', file: 'errors/config-paths-not-list.yaml', line: 1, message: /config_paths must be a list/}],
    [
      'a server block with two server-type keys',
      'errors/two-server-types.yaml',
      {reason: 'server-shape', file: 'errors/two-server-types.yaml', line: 4, pointer: '/confused/responses_api_agents', message: /'confused' has 2 server-type keys \(resources_servers, responses_api_agents\)/},
    ],
    [
      'a server type with two implementations',
      'errors/two-implementations.yaml',
      {reason: 'server-shape', file: 'errors/two-implementations.yaml', line: 2, message: /exactly one implementation key \(found simple_agent, swe_agents\)/},
    ],
    ['a config_paths entry escaping with ..', 'errors/escape-dotdot.yaml', {reason: 'outside-root', file: 'errors/escape-dotdot.yaml', line: 3, message: /'\.\.\/outside\/escape-target\.yaml' points outside the Gym root/}],
    ['an absolute config_paths entry outside the root', 'errors/escape-absolute.yaml', {reason: 'outside-root', file: 'errors/escape-absolute.yaml', line: 2, message: /'\/etc\/hostname' points outside/}],
    [
      '_inherit_from a path that does not exist',
      'errors/inherit-missing.yaml',
      {reason: 'directive', file: 'errors/inherit-missing.yaml', line: 2, pointer: '/lonely_rs/_inherit_from', message: /_inherit_from 'no_such_server' does not exist/},
    ],
    ['an _inherit_from cycle', 'errors/inherit-cycle.yaml', {reason: 'inherit-cycle', file: 'errors/inherit-cycle.yaml', line: 4, message: /_inherit_from cycle: first_rs -> second_rs -> first_rs/}],
    ['_delete_key of a key that is not there after inheriting', 'errors/delete-absent.yaml', {reason: 'directive', file: 'errors/delete-absent.yaml', line: 6, message: /_delete_key names 'not_there'/}],
  ]
  for (const [what, config, expected] of cases) {
    it(what, async () => expectError(await errorFor([config]), expected))
  }

  it('--gym-config escaping the root with ..', async () => {
    expectError(await errorFor(['../outside/escape-target.yaml']), {reason: 'outside-root', message: /--gym-config '\.\.\/outside\/escape-target\.yaml' points outside the Gym root/})
  })

  it('--gym-config as an absolute path outside the root', async () => {
    const outside = path.join(fixtureRoot, '..', 'outside', 'escape-target.yaml')
    expectError(await errorFor([outside]), {reason: 'outside-root', message: /points outside the Gym root/})
  })

  it('a --gym-config that does not exist', async () => {
    expectError(await errorFor(['environments/nope/config.yaml']), {reason: 'not-found', file: 'environments/nope/config.yaml', message: /--gym-config 'environments\/nope\/config\.yaml' was not found/})
  })

  it('a Gym root that is not a directory', async () => {
    expectError(await errorFor(['x.yaml'], path.join(fixtureRoot, 'nested', 'leaf.yaml')), {reason: 'gym-root', message: /is not a directory/})
  })

  it('no config at all', async () => {
    expectError(await errorFor([]), {reason: 'not-found', message: /no Gym config given/})
  })

  it('a symlink inside the root that leads out of it', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'gr-gym-config-'))
    const root = path.join(dir, 'gym')
    await mkdir(path.join(root, 'environments'), {recursive: true})
    await writeFile(path.join(dir, 'secret.yaml'), 'leak:\n  resources_servers:\n    leak: {entrypoint: app.py, domain: other}\n')
    await symlink(path.join(dir, 'secret.yaml'), path.join(root, 'environments', 'link.yaml'))
    await writeFile(path.join(root, 'top.yaml'), 'config_paths:\n  - environments/link.yaml\n')
    expectError(await errorFor(['environments/link.yaml'], root), {reason: 'outside-root', message: /resolves \(through a symlink\) to .*secret\.yaml, outside the Gym root/})
    expectError(await errorFor(['top.yaml'], root), {reason: 'outside-root', file: 'top.yaml', line: 2, message: /through a symlink/})
  })
})

describe('hostile Gym configs cost a bounded amount and are refused in one line', () => {
  async function rootWith(files: Record<string, string | Buffer>): Promise<string> {
    const root = await mkdtemp(path.join(os.tmpdir(), 'gr-gym-hostile-'))
    for (const [name, content] of Object.entries(files)) await writeFile(path.join(root, name), content)
    return root
  }
  /** Refused for its interpolations, at a line of the values below `after`. */
  function expectRefusedAfter(error: GymError, file: string, after: number, message: RegExp): void {
    expect(error).toMatchObject({code: 'E_GYM_CONFIG', exit: 2, details: {reason: 'interpolation'}, location: {file}})
    expect(error.message).toMatch(message)
    expect(error.location?.line).toBeGreaterThan(after)
  }
  const server = (extra: string) => `srv:\n  resources_servers:\n    r:\n      entrypoint: app.py\n      domain: other\n${extra}`

  it('an interpolation that doubles itself 40 times', async () => {
    const levels = Array.from({length: 40}, (_, i) => `      v${i + 1}: \${.v${i}}\${.v${i}}\n`).join('')
    const root = await rootWith({'bomb.yaml': server(`      v0: xxxxxxxxxx\n${levels}`)})
    expectRefusedAfter(await errorFor(['bomb.yaml'], root), 'bomb.yaml', 6, /interpolations expand the config by more than 8388608 characters and values/)
  })

  it('a mapping copied into itself level by level', async () => {
    const levels = Array.from({length: 40}, (_, i) => `      m${i + 1}: {a: "\${..m${i}}", b: "\${..m${i}}"}\n`).join('')
    const root = await rootWith({'bomb.yaml': server(`      m0: {x: 1}\n${levels}`)})
    expectRefusedAfter(await errorFor(['bomb.yaml'], root), 'bomb.yaml', 6, /expand the config by more than/)
  })

  it('a chain of references thousands deep', async () => {
    const chain = Array.from({length: 2000}, (_, i) => `      v${i}: \${.v${i + 1}}\n`).join('')
    const root = await rootWith({'chain.yaml': server(`${chain}      v2000: end\n`)})
    expectRefusedAfter(await errorFor(['chain.yaml'], root), 'chain.yaml', 6, /refer through more than 256 other interpolations/)
  })

  it('an alias inside the node its anchor names', async () => {
    const root = await rootWith({'self.yaml': 'a: &x [*x]\n'})
    await expect(loadGymGraph(root, ['self.yaml'])).rejects.toMatchObject({code: 'E_YAML_ALIASES', exit: 2, message: /aliases form a cycle/})
  })

  it('nesting 100,000 levels deep', async () => {
    const root = await rootWith({'deep.yaml': `a: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`})
    expectError(await errorFor(['deep.yaml'], root), {reason: 'yaml', file: 'deep.yaml', line: 1, message: /^invalid YAML: nested too deep to read$/})
  })

  it('a NUL byte, invalid UTF-8, a file over 1 MiB', async () => {
    const root = await rootWith({'nul.yaml': server('      x: "a\0b"\n'), 'latin1.yaml': Buffer.concat([Buffer.from(server('      x: caf')), Buffer.from([0xe9, 0x0a])]), 'big.yaml': server(`      x: "${'y'.repeat(1 << 20)}"\n`)})
    await expect(loadGymGraph(root, ['nul.yaml'])).rejects.toMatchObject({code: 'E_INPUT_NOT_TEXT', exit: 2, location: {line: 6}})
    await expect(loadGymGraph(root, ['latin1.yaml'])).rejects.toMatchObject({code: 'E_INPUT_NOT_TEXT', exit: 2, location: {line: 6}})
    await expect(loadGymGraph(root, ['big.yaml'])).rejects.toMatchObject({code: 'E_INPUT_TOO_LARGE', exit: 2, message: /over the 1048576-byte limit/})
  })

  it('a pipe where the config belongs is refused, not waited on', async () => {
    const root = await rootWith({})
    const {execFileSync} = await import('node:child_process')
    execFileSync('mkfifo', [path.join(root, 'fifo.yaml')])
    await expect(loadGymGraph(root, ['fifo.yaml'])).rejects.toMatchObject({code: 'E_INPUT_NOT_FILE', exit: 2})
  })

  it('duplicate keys are still found among 40,000 keys, in block and flow mappings', async () => {
    const many = Array.from({length: 40_000}, (_, i) => `      k${i}: ${i}\n`).join('')
    const root = await rootWith({'many.yaml': server(`${many}      k7: again\n`), 'flow.yaml': server('      f: {a: 1, b: 2, a: 3}\n'), 'typed.yaml': server('      t: {1: int, "1": str}\n')})
    expectError(await errorFor(['many.yaml'], root), {reason: 'yaml', file: 'many.yaml', line: 40_006, message: /Map keys must be unique/})
    expectError(await errorFor(['flow.yaml'], root), {reason: 'yaml', file: 'flow.yaml', line: 6, message: /Map keys must be unique/})
    // 1 and "1" are different keys to PyYAML as to the yaml library
    await expect(loadGymGraph(root, ['typed.yaml'])).resolves.toBeDefined()
  })
})

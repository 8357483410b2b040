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

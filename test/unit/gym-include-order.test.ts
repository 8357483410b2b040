/**
 * A Gym checkout's configs are merged in the include order of that checkout's own parser
 * (nemo_gym/global_config.py), and gymrecipe says when Gym's other order would read a config
 * differently. The parser texts below are small stand-ins carrying the construct each Gym
 * generation is recognised by; the real parsers of a85670e, #2478, #2572 and #2573 were checked
 * the same way by hand against a checkout (see the README).
 */
import {mkdir, mkdtemp, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterEach, beforeEach, describe, expect, it} from 'vitest'

import {loadGymGraph} from '../../src/contract/gym-config.js'
import {includeOrderOfParser, mergeOrder} from '../../src/contract/gym-config/include-order.js'

const LOAD = `
class GlobalConfigDictParser(BaseModel):
    def load_extra_config_paths(self, config_paths):
        config_paths = config_paths.copy()
        extra_configs = []
        for config_path in config_paths:
            extra_config = _load_config_yaml(config_path)
            for new_config_path in extra_config.get(CONFIG_PATHS_KEY_NAME) or []:
                if new_config_path not in config_paths:
                    config_paths.append(new_config_path)
            extra_configs.append(extra_config)
`
const PARSERS = {
  discovery: `${LOAD}        return config_paths, extra_configs\n`,
  'reverse-discovery': `${LOAD}        return config_paths, extra_configs\n\n    def parse(self):\n        config_paths, extra_configs = self.load_extra_config_paths(config_paths)\n        extra_configs.reverse()\n`,
  depth: `${LOAD}        depths: List[int] = [0] * len(config_paths)\n        merge_order = sorted(range(len(extra_configs)), key=lambda i: -depths[i])\n`,
  'post-order': `${LOAD}        while pending:\n            index, children_visited = pending.pop()\n            pending.extend((child, False) for child in reversed(children[index]))\n`,
} as const

describe('which order a parser merges in', () => {
  it.each(Object.entries(PARSERS))('recognises %s', (order, source) => {
    expect(includeOrderOfParser(source)).toBe(order)
  })

  it('recognises nothing in a file without load_extra_config_paths', () => {
    expect(includeOrderOfParser('print("hello")\n')).toBeUndefined()
  })
})

describe('merge order of an include tree', () => {
  // R includes [A, B]; B includes B1 (discovery order: R, A, B, B1).
  const nodes = [
    {children: [1, 2], depth: 0},
    {children: [], depth: 1},
    {children: [3], depth: 1},
    {children: [], depth: 2},
  ]
  it('differs between generations', () => {
    expect(mergeOrder('discovery', nodes, 1)).toEqual([0, 1, 2, 3])
    expect(mergeOrder('reverse-discovery', nodes, 1)).toEqual([3, 2, 1, 0])
    expect(mergeOrder('depth', nodes, 1)).toEqual([3, 1, 2, 0])
    expect(mergeOrder('post-order', nodes, 1)).toEqual([1, 3, 2, 0])
  })
})

describe('a checkout is read the way its own commit reads it', () => {
  let root: string
  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'gr-include-order-'))
    await mkdir(path.join(root, 'conf'), {recursive: true})
    // The includer and the included file set the same key.
    await writeFile(path.join(root, 'conf', 'top.yaml'), 'config_paths:\n  - conf/base.yaml\nsrv:\n  resources_servers:\n    impl:\n      entrypoint: app.py\n      domain: includer\n')
    await writeFile(path.join(root, 'conf', 'base.yaml'), 'srv:\n  resources_servers:\n    impl:\n      entrypoint: app.py\n      domain: included\n      only_here: 1\n')
  })
  afterEach(async () => {
    await rm(root, {recursive: true, force: true})
  })

  async function withParser(order: keyof typeof PARSERS | null) {
    if (order) {
      await mkdir(path.join(root, 'nemo_gym'), {recursive: true})
      await writeFile(path.join(root, 'nemo_gym', 'global_config.py'), PARSERS[order])
    }
    return loadGymGraph(root, ['conf/top.yaml'])
  }

  it('at the pinned parser (discovery order) the included file wins, and the difference is named', async () => {
    const graph = await withParser('discovery')
    expect(graph.includeOrder).toMatchObject({order: 'discovery', assumed: false})
    expect(graph.files).toEqual(['conf/top.yaml', 'conf/base.yaml'])
    expect(graph.resourcesServers[0].fields).toMatchObject({domain: 'included', only_here: 1})
    const warning = graph.problems.find((p) => p.message.startsWith('the include order decides'))
    expect(warning).toMatchObject({severity: 'warning', pointer: '/srv/resources_servers/impl/domain', file: 'conf/base.yaml'})
    expect(warning?.message).toContain('gives "included"')
    expect(warning?.message).toContain('would give "includer"')
  })

  it.each(['reverse-discovery', 'depth', 'post-order'] as const)('at a %s parser the includer wins', async (order) => {
    const graph = await withParser(order)
    expect(graph.includeOrder.order).toBe(order)
    expect(graph.resourcesServers[0].fields).toMatchObject({domain: 'includer', only_here: 1})
    // Compared with current Gym's order: here they agree (post-order is compared with discovery).
    const warning = graph.problems.find((p) => p.message.startsWith('the include order decides'))
    if (order === 'post-order') expect(warning?.message).toContain('would give "included"')
    else expect(warning).toBeUndefined()
  })

  it('without a parser in the root, current Gym\'s order is assumed and said to be assumed', async () => {
    const graph = await withParser(null)
    expect(graph.includeOrder).toMatchObject({order: 'post-order', assumed: true})
    expect(graph.includeOrder.how).toContain('no nemo_gym/global_config.py')
    expect(graph.resourcesServers[0].fields).toMatchObject({domain: 'includer'})
  })

  it('says nothing when both orders give the same config', async () => {
    await writeFile(path.join(root, 'conf', 'base.yaml'), 'other:\n  resources_servers:\n    impl:\n      entrypoint: app.py\n      domain: included\n')
    const graph = await withParser('discovery')
    expect(graph.problems.filter((p) => p.message.startsWith('the include order decides'))).toEqual([])
  })
})

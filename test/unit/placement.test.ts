import {describe, expect, it} from 'vitest'

import {assertDistinct} from '../../src/contract/additional-environments.js'

const env = (environment: string, agent: {name: string; placed_via?: string}, resource: {name: string; placed_via?: string} | null) => ({
  environment,
  gateway_config: `${environment}-v1`,
  agent: {type: 'simple_agent', max_steps: null, ...agent},
  resources_server: resource ? {implementation: 'math_with_judge', ...resource} : null,
})

describe('servers placed through the instance they inherit from', () => {
  it('refuses two servers that would take their host and port through one source', () => {
    const aime = env('aime24', {name: 'aime24_agent', placed_via: 'math_with_judge_simple_agent'}, {name: 'aime24_server', placed_via: 'math_with_judge'})
    const gsm8k = env('gsm8k', {name: 'gsm8k_agent', placed_via: 'math_with_judge_simple_agent'}, {name: 'gsm8k_server', placed_via: 'math_with_judge'})
    expect(() => assertDistinct([aime, gsm8k])).toThrow('aime24_agent and gsm8k_agent both take their host and port through math_with_judge_simple_agent (each inherits it with _inherit_from), so Gym would place them on one port')
  })

  it('refuses a server placed through another server the recipe starts under its own name', () => {
    const generic = env('math', {name: 'math_with_judge_simple_agent'}, {name: 'math_with_judge'})
    const bench = env('aime24', {name: 'aime24_agent', placed_via: 'math_with_judge_simple_agent'}, {name: 'aime24_server'})
    expect(() => assertDistinct([generic, bench])).toThrow(/math_with_judge_simple_agent and aime24_agent both take their host and port through math_with_judge_simple_agent/)
  })

  it('accepts servers placed through sources of their own, and one resources server shared by name', () => {
    const aime = env('aime24', {name: 'aime24_agent', placed_via: 'math_with_judge_simple_agent'}, {name: 'shared_server'})
    const workplace = env('workplace', {name: 'workplace_agent'}, {name: 'shared_server'})
    expect(() => assertDistinct([aime, workplace])).not.toThrow()
  })
})

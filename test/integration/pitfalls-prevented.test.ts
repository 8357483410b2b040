/**
 * Pitfalls of the real Relax recipes that generation makes impossible: each test shows the
 * generated files of every built-in can not have them (docs/pitfalls.json, status "prevented").
 */
import {describe, expect, it} from 'vitest'

import {loadBuiltin} from '../../src/contract/builtin.js'
import type {RecipeContract} from '../../src/contract/types.js'
import {renderRecipe, type RenderedFile} from '../../src/scaffold/render.js'

const BUILTINS = ['calendar', 'workplace-assistant', 'r2e-gym'] as const

async function rendered(contract: RecipeContract): Promise<Record<RenderedFile['role'], string>> {
  const files = await renderRecipe(contract)
  return Object.fromEntries(files.map((f) => [f.role, f.content])) as Record<RenderedFile['role'], string>
}

describe.each(BUILTINS)('the generated %s recipe', (builtin) => {
  it('[calendar#3] has one env.sh with the deployment values, and every script sources it', async () => {
    const f = await rendered(await loadBuiltin(builtin))
    for (const name of ['NEMO_GYM_IMAGE', 'MODEL_DIR', 'GYM_HOST', 'NEMO_GYM_GATEWAY_PORT', 'NEMO_GYM_SOURCE_DATA']) expect(f.env).toMatch(new RegExp(`^export ${name}=`, 'm'))
    for (const role of ['prepare', 'start', 'run'] as const) expect(f[role], role).toMatch(/source "\$\{SCRIPT_DIR\}\/env\.sh"/)
  })

  it('[calendar#9] has one Gateway port variable; the start script derives the others from it', async () => {
    const contract = await loadBuiltin(builtin)
    const f = await rendered(contract)
    expect(f.env.match(/^export \w*PORT\w*=/gm)).toEqual(['export NEMO_GYM_GATEWAY_PORT='])
    expect(f.start).toContain('local agent_port=$((gateway_port + 1))')
    if (contract.gym.resources_server) expect(f.start).toContain('local resource_port=$((gateway_port + 2))')
    else expect(f.start).not.toContain('resource_port')
    expect(f.start).toContain('local head_port=$((gateway_port + 3))')
    expect(f.run).toMatch(/^GATEWAY_URL="http:\/\/\$\{GYM_HOST\}:\$\{NEMO_GYM_GATEWAY_PORT\}"$/m)
  })

  it('[calendar#11] passes the recorded reasoning parser, and none when the contract records none', async () => {
    const contract = await loadBuiltin(builtin)
    const parser = contract.training.parsers.reasoning ?? 'qwen3'
    const withParser = {...contract, training: {...contract.training, parsers: {...contract.training.parsers, reasoning: parser}}}
    expect((await rendered(withParser)).run).toMatch(new RegExp(`^ {2}--agentic-reasoning-parser ${parser}$`, 'm'))
    if (builtin === 'calendar') expect(contract.training.parsers.reasoning).toBe('qwen3')
    const without = {...contract, training: {...contract.training, parsers: {...contract.training.parsers, reasoning: null}}}
    expect((await rendered(without)).run).not.toContain('--agentic-reasoning-parser')
  })

  it('[workplace-assistant#15] makes a new submission id per run and honours RAY_DASHBOARD_ADDRESS', async () => {
    const f = await rendered(await loadBuiltin(builtin))
    expect(f.run).toMatch(/^SUBMISSION_ID=\$\{RELAX_SUBMISSION_ID:-[a-z0-9-]+-\$\{now\}-\$\{BASHPID\}-\$\{RANDOM\}\}$/m)
    expect(f.run).toMatch(/^ {2}DASHBOARD_ADDRESS="\$\{RAY_DASHBOARD_ADDRESS\}"$/m)
    expect(f.run).toContain('--submission-id="${SUBMISSION_ID}"')
  })

  it('[r2e-gym#1] prepares the data without Ray', async () => {
    const f = await rendered(await loadBuiltin(builtin))
    expect(f.prepare).not.toMatch(/\bray\s+(?:start|job|submit)\b|RAY_ADDRESS|ray\.init/)
  })
})

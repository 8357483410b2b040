import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {repoRoot, runCli, snapshotRoot} from '../helpers/cli.js'

// Runs the built CLI (dist/): build with `npx tsc -p tsconfig.json` first.
const fixtureRoot = path.join(repoRoot, 'test', 'fixtures', 'gym-configs', 'root')

/** oclif wraps error output to the terminal width, prefixing each line with ›. */
const unwrap = (stderr: string) => stderr.replace(/\s*\n\s*›\s*/g, ' ')

describe('gymrecipe inspect', () => {
  it('prints the calendar graph for people', async () => {
    const result = await runCli(['inspect', '--gym-root', snapshotRoot, '--gym-config', 'environments/calendar/config.yaml'])
    expect(result.exitCode).toBe(0)
    const out = result.stdout
    expect(out).toContain('Files     environments/calendar/config.yaml')
    expect(out).toMatch(/Resources servers \(1\)\n {2}calendar {2}implementation: calendar\n/)
    expect(out).toMatch(/Agents \(1\)\n {2}calendar_simple_agent {2}type: simple_agent\n/)
    expect(out).toMatch(/resources_server {2}calendar\n/)
    expect(out).toMatch(/model_server {6}policy_model \(not defined in these configs\)/)
    expect(out).toMatch(/max_steps {9}-\n/)
    expect(out).toContain('source          huggingface nvidia/Nemotron-RL-agent-calendar_scheduling, artifact train.jsonl (written as huggingface_identifier)')
    expect(out).toContain('license         Apache 2.0')
    expect(out).toMatch(/Problems \(0 errors, 1 warning\)/)
  })

  it('returns the gsm8k graph under --json, inherited instances swapped out', async () => {
    const result = await runCli(['inspect', '--gym-root', snapshotRoot, '--gym-config', 'benchmarks/gsm8k/config.yaml', '--json'])
    expect(result.exitCode).toBe(0)
    const graph = result.json
    expect(graph.gym_root).toBe(snapshotRoot)
    expect(graph.files).toEqual(['resources_servers/math_with_judge/configs/math_with_judge.yaml', 'benchmarks/gsm8k/config.yaml'])
    expect(graph.resources_servers.map((server: any) => [server.id, server.implementation])).toEqual([['gsm8k_math_with_judge_resources_server', 'math_with_judge']])
    expect(graph.agents.map((agent: any) => [agent.id, agent.resources_server, agent.datasets.map((dataset: any) => dataset.name)])).toEqual([
      ['gsm8k_math_with_judge_simple_agent', 'gsm8k_math_with_judge_resources_server', ['gsm8k']],
    ])
    expect(Object.keys(graph.merged)).not.toContain('math_with_judge')
    // Each inherits a generic instance, through which Gym takes its command-line host and port.
    expect(graph.inherited_from).toEqual({gsm8k_math_with_judge_resources_server: 'math_with_judge', gsm8k_math_with_judge_simple_agent: 'math_with_judge_simple_agent'})
    const text = await runCli(['inspect', '--gym-root', snapshotRoot, '--gym-config', 'benchmarks/gsm8k/config.yaml'])
    expect(text.stdout).toContain('  gsm8k_math_with_judge_resources_server  implementation: math_with_judge  (inherits math_with_judge: its host and port are set there)')
  })

  it('shows max_steps and merges repeated --gym-config left to right', async () => {
    const result = await runCli([
      'inspect',
      '--gym-root',
      snapshotRoot,
      '--gym-config',
      'environments/calendar/config.yaml',
      '--gym-config',
      'resources_servers/workplace_assistant/configs/workplace_assistant.yaml',
      '--json',
    ])
    expect(result.exitCode).toBe(0)
    expect(result.json.agents.map((agent: any) => [agent.id, agent.max_steps])).toEqual([
      ['calendar_simple_agent', null],
      ['workplace_assistant_simple_agent', 6],
    ])
  })

  it('takes the Gym root from GYMRECIPE_GYM_ROOT', async () => {
    const result = await runCli(['inspect', '--gym-config', 'environments/workplace_assistant/config.yaml', '--json'], {env: {GYMRECIPE_GYM_ROOT: snapshotRoot}})
    expect(result.exitCode).toBe(0)
    expect(result.json.agents[0].max_steps).toBe(6)
  })

  it('exits 1 with the graph when it has errors, and redacts secrets', async () => {
    const result = await runCli(['inspect', '--gym-root', fixtureRoot, '--gym-config', 'graph/multi-agent.yaml', '--json'])
    expect(result.exitCode).toBe(1)
    expect(result.json.agents.map((agent: any) => agent.id)).toEqual(['shop_fast_agent', 'shop_slow_agent', 'orphan_agent'])
    expect(result.json.problems).toEqual([expect.objectContaining({severity: 'error', file: 'graph/multi-agent.yaml', line: 38})])
    expect(result.stdout).not.toMatch(/sk-fixture-not-real|hf_fixture_not_a_real_token/)
    expect(result.json.merged.hf_token).toBe('<redacted>')

    const human = await runCli(['inspect', '--gym-root', fixtureRoot, '--gym-config', 'graph/multi-agent.yaml'])
    expect(human.exitCode).toBe(1)
    expect(human.stdout).toMatch(/error {3}graph\/multi-agent\.yaml:38 {2}agent 'orphan_agent': resources_server names resources server 'warehouse'/)
    expect(human.stdout).toMatch(/resources_server {2}warehouse \(not defined in these configs\)/)
  })

  it('exits 2 on invalid YAML and names the file and line', async () => {
    const result = await runCli(['inspect', '--gym-root', fixtureRoot, '--gym-config', 'errors/includes-invalid.yaml'])
    expect(result.exitCode).toBe(2)
    expect(unwrap(result.stderr)).toMatch(/errors\/invalid-yaml\.yaml:6: invalid YAML/)
    expect(result.stderr).toContain('E_GYM_CONFIG')
    expect(result.stderr).not.toMatch(/\n\s+at /)

    const json = await runCli(['inspect', '--gym-root', fixtureRoot, '--gym-config', 'errors/includes-invalid.yaml', '--json'])
    expect(json.exitCode).toBe(2)
    expect(json.json.error).toMatchObject({code: 'E_GYM_CONFIG', exit: 2, location: {file: 'errors/invalid-yaml.yaml', line: 6}})
    // An error with no place in a file has location null, never an empty object.
    const nowhere = await runCli(['inspect', '--gym-root', path.join(fixtureRoot, 'no-such-root'), '--gym-config', 'x.yaml', '--json'])
    expect(nowhere.envelope).toMatchObject({status: 'bad-input', error: {code: 'E_GYM_CONFIG', location: null}})
  })

  it('exits 2 when a config escapes the Gym root', async () => {
    const result = await runCli(['inspect', '--gym-root', fixtureRoot, '--gym-config', '../outside/escape-target.yaml'])
    expect(result.exitCode).toBe(2)
    expect(unwrap(result.stderr)).toMatch(/--gym-config '\.\.\/outside\/escape-target\.yaml' points outside the Gym root/)
  })

  it('documents itself in --help', async () => {
    const result = await runCli(['inspect', '--help'])
    expect(result.exitCode).toBe(0)
    expect(result.stdout).toContain('--gym-config=<value>...')
    expect(result.stdout).toContain('GYMRECIPE_GYM_ROOT')
    expect(result.stdout).toMatch(/EXIT STATUS/)
    expect(result.stdout).toContain('$ gymrecipe inspect --gym-root ~/src/Gym --gym-config environments/calendar/config.yaml')
  })
})

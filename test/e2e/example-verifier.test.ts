import {execa, type ResultPromise} from 'execa'
import {mkdtemp, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {createInterface} from 'node:readline'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {repoRoot, runCli, snapshotRoot} from '../helpers/cli.js'
import {addModelConfigs} from '../helpers/recipes.js'

const EXAMPLE = path.join(repoRoot, 'examples', 'verifiers', 'math_with_judge.yaml')
const CONFIG = 'resources_servers/math_with_judge/configs/math_with_judge.yaml'
const FIXTURE_SERVICE = path.join(repoRoot, 'test', 'fixtures', 'relax-checkout', 'examples', 'nemo_gym_agentic', 'service')

/** The fixture's math_with_judge resources server on 127.0.0.1 (last \boxed{} against expected_answer). */
const SERVE_MATH = `
from fixture_gym.resources import MathWithJudgeServer
class Runtime:
    def liveness_gate(self): pass
server = MathWithJudgeServer("math_with_judge", {}, Runtime())
print(server.bind("127.0.0.1", 0), flush=True)
server.httpd.serve_forever()
`

let grader: ResultPromise | undefined
let resourceUrl = ''

beforeAll(async () => {
  grader = execa('python3', ['-c', SERVE_MATH], {env: {PYTHONPATH: FIXTURE_SERVICE}, reject: false, stderr: 'ignore'})
  const [port] = (await createInterface({input: grader.stdout!})[Symbol.asyncIterator]().next()).value.split(' ')
  resourceUrl = `http://127.0.0.1:${Number(port)}`
})

afterAll(async () => {
  grader?.kill('SIGTERM')
  await grader
})

/** Generate a math_with_judge recipe from a verifier file; its folder. */
async function generate(verifierFile: string): Promise<string> {
  const relax = await mkdtemp(path.join(os.tmpdir(), 'gr-example-verifier-'))
  await addModelConfigs(relax)
  const created = await runCli(['new', 'math', '--gym-root', snapshotRoot, '--gym-config', CONFIG, '--verifier', verifierFile, '--relax-root', relax, '--json'])
  expect(created.exitCode, JSON.stringify(created.json?.error)).toBe(0)
  const verified = await runCli(['verify', 'math', '--level', 'static', '--relax-root', relax, '--gym-root', snapshotRoot, '--json'])
  expect(verified.exitCode, verified.stdout).toBe(0)
  return created.json.dir
}

describe('the example verifier file (examples/verifiers/math_with_judge.yaml)', () => {
  it('makes a recipe for an environment no built-in knows, whose verifier tells a right answer from a wrong one', async () => {
    const dir = await generate(EXAMPLE)
    const contract = await readFile(path.join(dir, 'recipe.yaml'), 'utf8')
    expect(contract).toContain('expected_answer')
    const run = await execa('python3', [path.join(dir, 'verify_math.py'), '--resource-url', resourceUrl], {reject: false})
    expect(run.exitCode, run.stderr).toBe(0)
    expect(run.stdout).toContain('correct_reward=1.0 incorrect_reward=0.0')
  })

  it('the generated verifier fails when the known-wrong answer is in fact right', async () => {
    const scratch = await mkdtemp(path.join(os.tmpdir(), 'gr-example-verifier-bad-'))
    const broken = path.join(scratch, 'math.yaml')
    const text = await readFile(EXAMPLE, 'utf8')
    expect(text).toContain('"\\\\boxed{9}"')
    await writeFile(broken, text.replace('"\\\\boxed{9}"', '"\\\\boxed{8}"'))
    const dir = await generate(broken)
    const run = await execa('python3', [path.join(dir, 'verify_math.py'), '--resource-url', resourceUrl], {reject: false})
    expect(run.exitCode).not.toBe(0)
    expect(`${run.stdout}\n${run.stderr}`).toContain('incorrect_reward=1.0')
  })
})

/**
 * The README's first command (`npm run demo`, after the build): the whole validation ladder on the
 * emulated stack the tests run, with the product's own output.
 *
 * A scratch Relax checkout (the miniature Relax of test/fixtures: model configs, run_training.sh,
 * convert_dataset.py, the mini trainer, the Dockerfile of an emulated Gym image) is made at
 * GYMRECIPE_DEMO_ROOT (default /tmp/gymrecipe-demo); a folder there is replaced only when an earlier
 * demo made it. Then, for a recipe made from the Workplace Assistant built-in: new → prepare → start → verify --level
 * trial → train → verify --level training, against the real Docker Engine (the emulated Gym and
 * Gateway image), an emulated Ray (Jobs API and `ray` CLI) and a stand-in Relax Agentic API, all on
 * 127.0.0.1. Without a reachable Docker Engine it climbs the static rung only, and says so.
 * Everything it starts is stopped by id, its container and image removed by label; the recipe stays.
 */
import {execa} from 'execa'
import {promises as fsp} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {dockerUnavailableReason, ensureBaseImage, removeByLabel} from '../test/helpers/docker.js'
import {randomNodeId, startFakeRay} from '../test/helpers/ray-fixture.js'
import {freePortBlock, makeRelaxCheckout, startAgenticApiStandIn} from '../test/helpers/relax-fixture.js'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const root = path.resolve(process.env.GYMRECIPE_DEMO_ROOT || '/tmp/gymrecipe-demo')
const MARKER = '.gymrecipe-demo'
const gymRoot = path.join(repo, 'test', 'fixtures', 'nemo-gym-snapshot')
// Its own id, so that removing what it labelled can never touch a real workplace-assistant recipe's container.
const RECIPE = 'demo-workplace'
const HOST = '127.0.0.1'

const BOLD = process.stdout.isTTY && !process.env.NO_COLOR

function say(text: string): void {
  process.stdout.write(`\n${BOLD ? '\u001B[1mdemo:\u001B[0m' : 'demo:'} ${text}\n`)
}

/** Refuse a folder this demo did not make (or a link), else clear the earlier demo's. */
async function scratchRoot(): Promise<void> {
  const stat = await fsp.lstat(root).catch(() => undefined)
  if (!stat) return
  const ours = !stat.isSymbolicLink() && (await fsp.stat(path.join(root, MARKER)).catch(() => undefined))?.isFile()
  if (!ours) {
    process.stderr.write(`demo: ${root} exists and was not made by this demo; it is left as it is\nhint: set GYMRECIPE_DEMO_ROOT to a folder that does not exist yet\n`)
    process.exit(2)
  }
  await fsp.rm(root, {recursive: true, force: true})
}

/** One gymrecipe command, its own output shown as a user sees it; stops the demo when it fails. */
async function gymrecipe(args: string[], env: Record<string, string | undefined>): Promise<void> {
  process.stdout.write(`\n$ gymrecipe ${args.join(' ')}\n`)
  const run = await execa('node', [path.join(repo, 'bin', 'run.js'), ...args], {reject: false, stdio: 'inherit', env, extendEnv: false})
  if (run.exitCode !== 0) throw new Error(`gymrecipe ${args[0]} exited ${run.exitCode}`)
}

async function main(): Promise<void> {
  if (!(await fsp.stat(path.join(repo, 'dist', 'index.js')).catch(() => undefined))) {
    process.stderr.write('demo: the CLI is not built; run npm run build first (npm run demo does)\n')
    process.exit(2)
  }
  await scratchRoot()
  const dockerMissing = await dockerUnavailableReason()
  await fsp.mkdir(root, {recursive: true})
  await makeRelaxCheckout(root, {hostGym: false, snapshotDir: gymRoot})
  await fsp.writeFile(path.join(root, MARKER), 'made by gymrecipe\'s demo (scripts/demo.ts); safe to delete\n')
  const models = path.join(root, 'demo-models')
  await fsp.mkdir(path.join(models, 'Qwen3-4B'), {recursive: true})
  await fsp.writeFile(path.join(models, 'Qwen3-4B', 'config.json'), '{"architectures": ["Qwen3ForCausalLM"]}\n')
  say(`a scratch Relax checkout at ${root}`)

  const base: Record<string, string | undefined> = {PATH: process.env.PATH, HOME: process.env.HOME, TERM: process.env.TERM, NO_COLOR: process.env.NO_COLOR, DOCKER_HOST: process.env.DOCKER_HOST, GYMRECIPE_GYM_ROOT: gymRoot, XDG_STATE_HOME: path.join(root, 'demo-state')}
  const block = await freePortBlock(100, 27000, 4000)
  await gymrecipe(['new', RECIPE, '--from', 'workplace-assistant', '--gym-root', gymRoot, '--gym-config', 'resources_servers/workplace_assistant/configs/workplace_assistant.yaml', '--port-base', String(block), '--gcs-port', String(block + 18), '--relax-root', root], base)
  if (dockerMissing) {
    say(`no Docker Engine here (${dockerMissing}): climbing the static rung only; the other five need the emulated Gym image`)
    await gymrecipe(['verify', RECIPE, '--level', 'static', '--relax-root', root], base)
    return
  }

  say('building the emulated stack: the test base image, an emulated Ray, a stand-in Relax Agentic API (127.0.0.1 only)')
  await ensureBaseImage()
  const ray = await startFakeRay({nodes: [{node_id: randomNodeId(), node_ip: HOST, is_head: true}], stopGraceS: 1})
  const relax = await startAgenticApiStandIn()
  const env = {
    ...base,
    ...ray.env(),
    RAY_DASHBOARD_ADDRESS: ray.url,
    GYM_HOST: HOST,
    GYM_BIND_HOST: HOST,
    NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '127.0.0.0/8',
    NEMO_GYM_IMAGE: `gymrecipe-demo:${RECIPE}`,
    NEMO_GYM_SOURCE_DATA: path.join(root, 'demo-shared', 'demo_workplace_train.jsonl'),
    MODEL_DIR: models,
    EXP_DIR: path.join(root, 'demo-outputs'),
    RELAX_HOST: HOST,
    RELAX_PORT: String(relax.port),
    DOCKER_CLI_HINTS: 'false',
  }
  try {
    say('step 1 of 3: prepare the data (downloaded inside the image from an offline hub), then the static and data rungs')
    await gymrecipe(['prepare', RECIPE, '--relax-root', root], env)
    say('step 2 of 3: start the Gym service in Docker, then the service rung (the verifier grades a right and a wrong answer)')
    await gymrecipe(['start', RECIPE, '--relax-root', root], env)
    say('the network rung both ways, then a deterministic trial through the Gateway with tool results fed back and cleanup proven')
    await gymrecipe(['verify', RECIPE, '--level', 'trial', '--relax-root', root], env)
    say('step 3 of 3: submit training with ray job submit (the mini Relax runs real trials), then the training rung from its outputs')
    await gymrecipe(['train', RECIPE, '--poll-interval', '1', '--relax-root', root], env)
    await gymrecipe(['verify', RECIPE, '--level', 'training', '--relax-root', root], env)
    say(`every rung passed on the emulated stack; the recipe is in ${root}/examples/nemo_gym_agentic/recipes/${RECIPE}`)
  } finally {
    await ray.stop()
    await relax.close()
    await removeByLabel(`ai.relax.recipe=${RECIPE}`).catch(() => undefined)
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`demo: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exitCode = 1
})

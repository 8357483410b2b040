/**
 * The fixture Relax checkout (test/fixtures/relax-checkout) and ways to run its
 * NeMo Gym / Relax Gateway emulator (fixture_gym), in Docker or on the host.
 *
 * makeRelaxCheckout() copies the fixture tree into a directory, stages the real
 * NeMo Gym snapshot files into the build context
 * (examples/nemo_gym_agentic/service/fixture_gym_root, copied to /opt/nemo-gym by
 * the Dockerfile) and, for host runs, lays out a Gym root under .host-gym/
 * (excluded from the Docker build context) with the same venv/CLI layout as the
 * image.
 */
import {execa, type ResultPromise} from 'execa'
import {existsSync} from 'node:fs'
import fs from 'node:fs/promises'
import http from 'node:http'
import net, {type AddressInfo} from 'node:net'
import path from 'node:path'
import {fileURLToPath} from 'node:url'
import {repeatedRows} from './recipes.js'

const here = path.dirname(fileURLToPath(import.meta.url))
export const repoRoot = path.resolve(here, '..', '..')
export const RELAX_FIXTURE_DIR = path.join(repoRoot, 'test', 'fixtures', 'relax-checkout')
export const SNAPSHOT_DIR = process.env.GYMRECIPE_NEMO_GYM_SNAPSHOT ?? path.join(repoRoot, 'test', 'fixtures', 'nemo-gym-snapshot')
export const PINNED_GYM_COMMIT = 'a85670eb167ba9b48cc53a36a070eed815e6c40d'
export const DOCKERFILE = 'examples/nemo_gym_agentic/service/Dockerfile'
const SERVICE_REL = 'examples/nemo_gym_agentic/service'
/** In-image path of the fault file (tests write it into the checkout before building). */
export const IMAGE_FAULTS_FILE = '/opt/relax-integration/examples/nemo_gym_agentic/service/fixture-faults.json'
/** Server dirs that get a prebuilt venv python, as in the real Dockerfile loop. */
export const VENV_SERVER_DIRS = [
  'responses_api_models/relax_gateway_model',
  'responses_api_agents/simple_agent',
  'responses_api_agents/swe_agents',
  'resources_servers/calendar',
  'resources_servers/workplace_assistant',
  'resources_servers/math_with_judge',
  'resources_servers/example_multi_step',
]

/** Fault-injection keys understood by fixture_gym (see fixture_gym/README.md). */
export interface FixtureFaults {
  exit_after_s?: number
  exit_code?: number
  never_ready?: boolean
  ready_delay_s?: number
  stale_trials?: number
  gym_commit?: string
  reject_model_replies?: boolean
}

export interface RelaxCheckout {
  /** The checkout root = the Docker build context. */
  root: string
  /** Dockerfile path relative to root. */
  dockerfile: string
  /** Where tests write fixture-faults.json before building the image. */
  faultsFile: string
  /** Host-run Gym root (like /opt/nemo-gym), or undefined when made with hostGym:false. */
  gymRoot?: string
  /** Host-run state dirs (Ray head records, fake hub). */
  rayStateDir?: string
  hubRoot?: string
  /** python3 used for host runs (has PyYAML). */
  python?: string
}

let hostPython: Promise<string> | undefined

/** A python3 with PyYAML for host runs of the emulator (env GYMRECIPE_FIXTURE_PYTHON wins). */
export function findHostPython(): Promise<string> {
  hostPython ??= (async () => {
    const candidates = [process.env.GYMRECIPE_FIXTURE_PYTHON, 'python3', '/usr/bin/python3'].filter(Boolean) as string[]
    for (const candidate of candidates) {
      const result = await execa(candidate, ['-c', 'import sys, yaml; print(sys.executable)'], {reject: false, timeout: 20_000})
      if (result.exitCode === 0) return String(result.stdout).trim()
    }
    throw new Error(`No python3 with PyYAML found (tried ${candidates.join(', ')}); install python3-yaml`)
  })()
  return hostPython
}

async function copyTree(from: string, to: string): Promise<void> {
  await fs.cp(from, to, {recursive: true, force: true, filter: (src) => !src.includes(`${path.sep}__pycache__`)})
}

async function makeWritable(dir: string): Promise<void> {
  const entries = await fs.readdir(dir, {withFileTypes: true})
  await fs.chmod(dir, 0o755)
  for (const entry of entries) {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) await makeWritable(full)
    else if (entry.isFile()) await fs.chmod(full, 0o644)
  }
}

/** Write (or, with undefined, remove) the fault file in a checkout. Rebuild the image afterwards. */
export async function writeFaults(checkout: RelaxCheckout, faults: FixtureFaults | undefined): Promise<void> {
  if (faults === undefined) await fs.rm(checkout.faultsFile, {force: true})
  else await fs.writeFile(checkout.faultsFile, JSON.stringify(faults, null, 2) + '\n')
}

/**
 * Copy the fixture Relax checkout into targetDir (created if needed) and stage the
 * NeMo Gym snapshot at its original paths for the image. With hostGym (default
 * true) also lay out `<targetDir>/.host-gym/nemo-gym` for host runs.
 */
export async function makeRelaxCheckout(
  targetDir: string,
  options: {faults?: FixtureFaults; snapshotDir?: string; hostGym?: boolean; tracebackPatch?: boolean} = {},
): Promise<RelaxCheckout> {
  const snapshot = options.snapshotDir ?? SNAPSHOT_DIR
  if (!existsSync(snapshot)) throw new Error(`NeMo Gym snapshot not found at ${snapshot} (set GYMRECIPE_NEMO_GYM_SNAPSHOT)`)
  await fs.mkdir(targetDir, {recursive: true})
  await copyTree(RELAX_FIXTURE_DIR, targetDir)
  const stagedGym = path.join(targetDir, SERVICE_REL, 'fixture_gym_root')
  await fs.rm(stagedGym, {recursive: true, force: true})
  await copyTree(snapshot, stagedGym)
  await makeWritable(stagedGym) // the shared snapshot is read-only; copies keep its modes
  // The stock nemo_gym/server_utils.py stand-in; the image build applies service/patches/ to it.
  await copyTree(path.join(targetDir, SERVICE_REL, 'fixture_gym', 'stand_in', 'nemo_gym'), path.join(stagedGym, 'nemo_gym'))
  // A deployment built without Relax's traceback patch (stock Gym).
  if (options.tracebackPatch === false) await fs.rm(path.join(targetDir, SERVICE_REL, 'patches', 'nemo_gym_http_error_traceback.patch'))
  const checkout: RelaxCheckout = {
    root: targetDir,
    dockerfile: DOCKERFILE,
    faultsFile: path.join(targetDir, SERVICE_REL, 'fixture-faults.json'),
  }
  await writeFaults(checkout, options.faults)
  if (options.hostGym !== false) await layoutHostGym(checkout, stagedGym)
  return checkout
}

async function layoutHostGym(checkout: RelaxCheckout, stagedGym: string): Promise<void> {
  const python = await findHostPython()
  const base = path.join(checkout.root, '.host-gym')
  const gymRoot = path.join(base, 'nemo-gym')
  await fs.rm(base, {recursive: true, force: true})
  await copyTree(stagedGym, gymRoot)
  // Relax's build applies its patches to the Gym tree; the host layout does the same.
  const patches = path.join(checkout.root, SERVICE_REL, 'patches')
  for (const patch of (await fs.readdir(patches).catch(() => [] as string[])).filter((name) => name.endsWith('.patch')).sort()) {
    await execa(python, ['-m', 'fixture_gym.apply_patch', gymRoot, path.join(patches, patch)], {cwd: path.join(checkout.root, SERVICE_REL)})
  }
  await copyTree(path.join(checkout.root, SERVICE_REL, 'nemo_gym_gateway_model'), path.join(gymRoot, 'responses_api_models', 'relax_gateway_model'))
  const bin = path.join(gymRoot, '.venv', 'bin')
  await fs.mkdir(bin, {recursive: true})
  await fs.symlink(python, path.join(bin, 'python'))
  const template = await fs.readFile(path.join(checkout.root, SERVICE_REL, 'fixture_gym', 'bin', 'wrapper.sh.in'), 'utf8')
  for (const tool of ['gym', 'ray']) {
    const text = template
      .replaceAll('@PKG_DIR@', path.join(checkout.root, SERVICE_REL))
      .replaceAll('@PYTHON@', python)
      .replaceAll('@TOOL@', tool)
    await fs.writeFile(path.join(bin, tool), text, {mode: 0o755})
  }
  for (const dir of VENV_SERVER_DIRS) {
    const venvBin = path.join(gymRoot, dir, '.venv', 'bin')
    await fs.mkdir(venvBin, {recursive: true})
    await fs.symlink(python, path.join(venvBin, 'python'))
  }
  // Offline hub with the same repos as the image (copies of the snapshot examples).
  const hub = path.join(base, 'fake-hub')
  const hubFiles: Array<[string, string]> = [
    ['nvidia/Nemotron-RL-agent-calendar_scheduling', 'environments/calendar/data/example.jsonl'],
    ['nvidia/Nemotron-RL-agent-workplace_assistant', 'resources_servers/workplace_assistant/data/example.jsonl'],
    ['nvidia/Nemotron-RL-math-OpenMathReasoning', 'resources_servers/math_with_judge/data/example.jsonl'],
  ]
  for (const [repo, source] of hubFiles) {
    await fs.mkdir(path.join(hub, repo), {recursive: true})
    // A train split as large as a run needs; the validation split as small as the example.
    await fs.writeFile(path.join(hub, repo, 'train.jsonl'), await repeatedRows(path.join(gymRoot, source)))
    await fs.copyFile(path.join(gymRoot, source), path.join(hub, repo, 'validation.jsonl'))
  }
  checkout.gymRoot = gymRoot
  checkout.python = python
  checkout.rayStateDir = path.join(base, 'ray-state')
  checkout.hubRoot = hub
}

/** Environment that points a host run of the emulator at a checkout's host Gym root. */
export function hostGymEnv(checkout: RelaxCheckout): Record<string, string> {
  if (!checkout.gymRoot) throw new Error('checkout was made without hostGym')
  return {
    FIXTURE_GYM_ROOT: checkout.gymRoot,
    FIXTURE_GYM_FAULTS_FILE: checkout.faultsFile,
    FIXTURE_RAY_STATE_DIR: checkout.rayStateDir!,
    FIXTURE_GYM_HUB_ROOT: checkout.hubRoot!,
  }
}

// ------------------------------------------------------------------ ports

function portFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer()
    server.once('error', () => resolve(false))
    server.listen({port, host, exclusive: true}, () => server.close(() => resolve(true)))
  })
}

/**
 * First block of `count` consecutive free 127.0.0.1 ports in [base, base+span),
 * scanning from a pid-dependent offset so parallel runs rarely collide. Keep
 * bases in 21000-28000 (outside the ephemeral range).
 */
export async function freePortBlock(count: number, base: number, span = 900): Promise<number> {
  const slots = Math.floor(span / count)
  const offset = process.pid % slots
  for (let i = 0; i < slots; i++) {
    const start = base + ((offset + i) % slots) * count
    let ok = true
    for (let p = start; p < start + count && ok; p++) ok = await portFree(p)
    if (ok) return start
  }
  throw new Error(`no ${count} consecutive free ports in ${base}-${base + span}`)
}

// ------------------------------------------------------------------ the start interface

/** Port layout of one emulated recipe service (gateway = base, agent +1, resource +2, head +3). */
export interface GymLayout {
  host: string
  bindHost: string
  gateway: number
  agent: number
  resource?: number
  head: number
  rayPort: number
  rayDashboardPort: number
}

export interface GraphNames {
  configPaths: string[]
  agentName: string
  agentType: string
  resourceName?: string
  resourceImpl?: string
}

export const CALENDAR_GRAPH: GraphNames = {
  configPaths: ['environments/calendar/config.yaml'],
  agentName: 'calendar_simple_agent',
  agentType: 'simple_agent',
  resourceName: 'calendar',
  resourceImpl: 'calendar',
}

export const WORKPLACE_GRAPH: GraphNames = {
  configPaths: ['resources_servers/workplace_assistant/configs/workplace_assistant.yaml'],
  agentName: 'workplace_assistant_simple_agent',
  agentType: 'simple_agent',
  resourceName: 'workplace_assistant',
  resourceImpl: 'workplace_assistant',
}

export interface EnvironmentRegistration {
  environment: string
  config: string
  agentName: string
  maxConcurrency?: number
  queueCapacity?: number
  maxDeadlineS?: number
  /** Stateful environments: abort/force/probe at `<resource>/cleanup/{rollout_id}`. */
  cleanupUrls?: boolean
  interruptPolicy?: string
}

/** NEMO_GYM_GATEWAY_ENVIRONMENTS_JSON for one environment (compact, §4.3 schema). */
export function gatewayEnvironmentsJson(layout: GymLayout, reg: EnvironmentRegistration): string {
  const agentUrl = `http://${layout.host}:${layout.agent}`
  const readiness = [agentUrl]
  if (layout.resource !== undefined) readiness.push(`http://${layout.host}:${layout.resource}`)
  const maxConcurrency = reg.maxConcurrency ?? 8
  const spec: Record<string, unknown> = {
    environment: reg.environment,
    agent_name: reg.agentName,
    agent_url: agentUrl,
    readiness_urls: readiness,
    interrupt_policy: reg.interruptPolicy ?? 'protected',
    max_concurrency: maxConcurrency,
    queue_capacity: reg.queueCapacity ?? maxConcurrency * 4,
    max_deadline_s: reg.maxDeadlineS ?? 1800,
  }
  if (reg.cleanupUrls) {
    const cleanup = `http://${layout.host}:${layout.resource}/cleanup/{rollout_id}`
    Object.assign(spec, {abort_url: cleanup, force_cleanup_url: cleanup, cleanup_probe_url: cleanup})
  }
  return JSON.stringify({[reg.config]: spec})
}

/** `ray start --head ...` arguments (after the ray executable) of the fixed interface. */
export function rayStartArgs(layout: GymLayout, tempDir: string, numCpus = 2): string[] {
  return [
    'start', '--head', `--node-ip-address=${layout.host}`, `--port=${layout.rayPort}`, `--num-cpus=${numCpus}`,
    `--dashboard-port=${layout.rayDashboardPort}`, `--temp-dir=${tempDir}`, '--include-dashboard=false', '--disable-usage-stats',
  ]
}

/** `gym env start ...` arguments (after the gym executable) of the fixed interface. */
export function gymEnvStartArgs(layout: GymLayout, graph: GraphNames): string[] {
  const b = layout.bindHost
  const args = [
    'env', 'start',
    `+config_paths=[responses_api_models/relax_gateway_model/configs/relax_gateway_model.yaml,${graph.configPaths.join(',')}]`,
    '+observability_enabled=true', '++global_aiohttp_client_request_debug=True', '+skip_venv_if_present=true',
    `+ray_head_node_address=${layout.host}:${layout.rayPort}`, `+default_host=${layout.host}`,
    `++head_server.host=${b}`, `++head_server.port=${layout.head}`,
    `++policy_model.responses_api_models.relax_gateway_model.host=${b}`,
    `++policy_model.responses_api_models.relax_gateway_model.port=${layout.gateway}`,
    `++${graph.agentName}.responses_api_agents.${graph.agentType}.host=${b}`,
    `++${graph.agentName}.responses_api_agents.${graph.agentType}.port=${layout.agent}`,
  ]
  if (graph.resourceName && graph.resourceImpl && layout.resource !== undefined) {
    args.push(
      `++${graph.resourceName}.resources_servers.${graph.resourceImpl}.host=${b}`,
      `++${graph.resourceName}.resources_servers.${graph.resourceImpl}.port=${layout.resource}`,
    )
  }
  return args
}

/** Quote one word for bash. */
export function shQuote(word: string): string {
  return /^[A-Za-z0-9_./:=+,@%-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`
}

/**
 * The in-container command sequence of the fixed interface as one bash script
 * (what the generated start script does), for `docker run ... bash -c`.
 */
export function inContainerStartScript(options: {
  layout: GymLayout
  graph: GraphNames
  registration: EnvironmentRegistration
  callbackNetworks?: string
  gymRoot?: string
}): string {
  const gymRoot = options.gymRoot ?? '/opt/nemo-gym'
  const {layout} = options
  const envJson = gatewayEnvironmentsJson(layout, options.registration)
  return [
    'set -euo pipefail',
    'unset RAY_ADDRESS RAY_JOB_SUBMISSION_ID',
    'ray_tmp="$(mktemp -d /tmp/nemo-gym-fixture-ray.XXXXXX)"',
    `${gymRoot}/.venv/bin/ray ${rayStartArgs(layout, '"${ray_tmp}"').map((a) => (a.includes('${ray_tmp}') ? a : shQuote(a))).join(' ')}`,
    `export NEMO_GYM_GATEWAY_ENVIRONMENTS_JSON=${shQuote(envJson)}`,
    `export NEMO_GYM_CALLBACK_ALLOWED_NETWORKS=${shQuote(options.callbackNetworks ?? '127.0.0.0/8')}`,
    `export NO_PROXY=${shQuote(`127.0.0.1,localhost,${layout.host}`)} no_proxy=${shQuote(`127.0.0.1,localhost,${layout.host}`)}`,
    `cd ${gymRoot} && exec ${gymRoot}/.venv/bin/gym ${gymEnvStartArgs(layout, options.graph).map(shQuote).join(' ')}`,
  ].join('\n')
}

// ------------------------------------------------------------------ host runs

export interface HostGym {
  process: ResultPromise
  /** Everything the emulator printed so far (stdout + stderr). */
  output(): string
  /** Resolve when a line matching `pattern` appears (rejects on exit or timeout). */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<void>
  /** SIGTERM the process (by pid) and wait for it to exit; returns its exit code. */
  stop(): Promise<number | undefined>
  exited: Promise<number | undefined>
}

/** Run `<gymRoot>/.venv/bin/<tool> ...args` on the host with the checkout's fixture env. */
export async function runHostTool(
  checkout: RelaxCheckout,
  tool: 'gym' | 'ray',
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<{exitCode: number; stdout: string; stderr: string}> {
  const result = await execa(path.join(checkout.gymRoot!, '.venv', 'bin', tool), args, {
    reject: false,
    cwd: checkout.gymRoot,
    env: {...hostGymEnv(checkout), ...env},
    timeout: 60_000,
  })
  return {exitCode: result.exitCode ?? -1, stdout: String(result.stdout), stderr: String(result.stderr)}
}

/**
 * Start the emulated service on the host the way the in-container script does:
 * unset RAY_ADDRESS, `ray start --head`, then `gym env start` with the env JSON.
 */
export async function startHostGym(
  checkout: RelaxCheckout,
  options: {layout: GymLayout; graph: GraphNames; registration: EnvironmentRegistration; env?: Record<string, string | undefined>},
): Promise<HostGym> {
  const gymRoot = checkout.gymRoot!
  const rayTmp = await fs.mkdtemp(path.join(checkout.root, '.host-gym', 'ray-tmp-'))
  const baseEnv: Record<string, string | undefined> = {
    ...hostGymEnv(checkout),
    RAY_ADDRESS: undefined,
    RAY_JOB_SUBMISSION_ID: undefined,
    NEMO_GYM_COMMIT: PINNED_GYM_COMMIT,
    NEMO_GYM_GATEWAY_ENVIRONMENTS_JSON: gatewayEnvironmentsJson(options.layout, options.registration),
    NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '127.0.0.0/8',
    NO_PROXY: `127.0.0.1,localhost,${options.layout.host}`,
    ...options.env,
  }
  const ray = await execa(path.join(gymRoot, '.venv', 'bin', 'ray'), rayStartArgs(options.layout, rayTmp), {
    reject: false,
    env: baseEnv,
    extendEnv: true,
    timeout: 30_000,
  })
  if (ray.exitCode !== 0) throw new Error(`fixture ray start failed: ${String(ray.stderr)}`)
  const child = execa(path.join(gymRoot, '.venv', 'bin', 'gym'), gymEnvStartArgs(options.layout, options.graph), {
    reject: false,
    cwd: gymRoot,
    env: baseEnv,
    all: true,
    buffer: false,
  })
  let output = ''
  const waiters: Array<() => void> = []
  child.all?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
    for (const waiter of waiters.splice(0)) waiter()
  })
  const exited = child.then((r) => r.exitCode ?? undefined)
  let done = false
  void exited.then(() => {
    done = true
    for (const waiter of waiters.splice(0)) waiter()
  })
  return {
    process: child,
    output: () => output,
    exited,
    waitForOutput(pattern, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out waiting for ${pattern} in:\n${output}`)), timeoutMs)
        const check = () => {
          if (pattern.test(output)) {
            clearTimeout(timer)
            resolve()
          } else if (done) {
            clearTimeout(timer)
            reject(new Error(`emulator exited before printing ${pattern}:\n${output}`))
          } else {
            waiters.push(check)
          }
        }
        check()
      })
    },
    async stop() {
      if (!done && child.pid) process.kill(child.pid, 'SIGTERM')
      const timer = setTimeout(() => {
        if (!done && child.pid) process.kill(child.pid, 'SIGKILL')
      }, 10_000)
      const code = await exited
      clearTimeout(timer)
      return code
    },
  }
}

/** Poll `<gatewayUrl>/readyz` until ready:true (returns the body) or time out. */
export async function waitForReadyz(gatewayUrl: string, timeoutMs = 30_000): Promise<any> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  while (Date.now() < deadline) {
    try {
      const response = await fetch(`${gatewayUrl}/readyz`)
      last = await response.json()
      if (response.status === 200 && (last as any).ready === true) return last
    } catch (error) {
      last = error
    }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  throw new Error(`gateway ${gatewayUrl} not ready after ${timeoutMs} ms; last: ${JSON.stringify(last)}`)
}

/**
 * A stand-in for the Relax host's Agentic API on 127.0.0.1: /agentic_api/* answers 401 (reachable,
 * not authorised, as the real one answers a request without its key), anything else 404.
 */
export async function startAgenticApiStandIn(): Promise<{port: number; close(): Promise<void>}> {
  const server = http.createServer((req, res) => {
    req.resume()
    res.statusCode = req.url?.startsWith('/agentic_api/') ? 401 : 404
    res.end('{}')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/**
 * `gymrecipe start`: run the recipe's start script (host side: fresh image, ownership check,
 * replace only its own container) and watch the container natively while it does — Docker
 * events for create/start/die, fast /readyz polling — instead of trusting the script's 2-second
 * loop. Then climb static → data → service.
 */
import {setTimeout as sleep} from 'node:timers/promises'
import type Docker from 'dockerode'
import {promises as fsp} from 'node:fs'
import path from 'node:path'

import {ExitCode, GymError, usageError} from '../errors.js'
import {checkContext, describeService, RUNG_DEFINITIONS, runLadder, type LadderPrinter, type LadderReport, type ServiceDescription} from '../ladder/index.js'
import {resolveRecipe} from '../recipe/target.js'
import type {RecipeTarget} from '../recipe/types.js'
import {type ContainerState, containerLogTail, imageIdOf, inspectContainer, removeContainer} from '../runtime/container.js'
import {type ContainerEvent, type EventWatch, watchContainerEvents} from '../runtime/docker-events.js'
import {dockerTarget, OWNERSHIP_LABEL, requireDocker, tryDocker} from '../runtime/docker.js'
import {pathExists} from '../runtime/fs.js'
import {type HttpAnswer, readyz} from '../runtime/http.js'
import {portAcceptsConnections} from '../runtime/net.js'
import {scriptEnvironment} from '../runtime/recipe-env.js'
import {type BuilderChoice, chooseDockerBuilder, type DockerBuilder} from '../runtime/docker-builder.js'
import {runScript, type ScriptRun} from '../runtime/script.js'
import {assertGymRoot} from '../contract/gym-config/paths.js'
import {verbatim} from '../json-document.js'

export interface StartIO {
  /** Live output of the start script, as it arrives. */
  scriptOutput(stream: 'stdout' | 'stderr', text: string): void
  /** A progress line for people. */
  note(line: string): void
}

export interface StartOptions {
  relaxRoot: string
  recipe: string
  env: NodeJS.ProcessEnv
  dryRun: boolean
  /** Readiness deadline in seconds after the container starts (default: NEMO_GYM_START_TIMEOUT_S, else the contract's). */
  timeoutS?: number
  gymRoot?: string
  smoke: boolean
  /** Where the ladder's lines go (absent: nothing printed). */
  printer?: LadderPrinter
  /** Climb static → data → service after the service is ready (default true). */
  climb?: boolean
  /** Ctrl+C: stop what this run started. */
  signal?: AbortSignal
  io: StartIO
  /** /readyz poll period in ms (default 150). */
  pollMs?: number
}

export interface ContainerReport {
  name: string
  id: string | null
  image: string | null
  image_id: string | null
  /** running | exited (code N) | removed | not created | ... */
  state: string
  /** The previous container of this recipe that the script replaced, if any. */
  replaced: string | null
}

export interface StartReport {
  recipe: string
  dir: string
  dryRun: boolean
  script: {path: string; command: string[]; exitCode: number | null}
  container: ContainerReport
  gatewayUrl: string
  /** The builder the script's docker build uses: BuildKit where docker has buildx, else the legacy one, or the caller's DOCKER_BUILDKIT. */
  dockerBuilder: DockerBuilder
  readiness: null | {
    ready: boolean
    timeoutS: number
    containerStartedAt: string
    readyAt: string
    /** From the container's start to the moment start saw /readyz ready. */
    elapsedMs: number
    readyz: unknown
  }
  /** Dry run: what would happen. */
  plan: null | {
    existing: null | {id: string; owner: string | null; state: string}
    action: string
    /** The exit status the real run would have for what a dry run can know (3: it would refuse). */
    wouldExit: number
    /** env.sh was sourced with bash to read its values (its commands ran, even in a dry run). */
    envShSourced: boolean
    ports: Array<{label: string; port: number}>
    env: Record<string, string>
    then: string
  }
  ladder: LadderReport | null
}

const NO_WAIT_ENV = 'NEMO_GYM_START_NO_WAIT'
const LOG_LINES = 200

const short = (id: string | null | undefined) => (id ?? '').replace(/^sha256:/, '').slice(0, 12)

/** The promise's value, or undefined after ms; the timer never outlives the race (it would keep the CLI alive). */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([promise, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)))])
  } finally {
    clearTimeout(timer)
  }
}

function stateText(c: ContainerState | undefined): string {
  if (!c) return 'removed'
  if (c.running) return c.restarting ? 'restarting' : 'running'
  if (c.status === 'created') return 'created, never started'
  return `${c.status} (exit code ${c.exitCode}${c.oomKilled ? ', OOM-killed' : ''})`
}

/** Resolve the recipe and what its service should look like. */
async function readStartInputs(o: StartOptions): Promise<{target: RecipeTarget; desc: ServiceDescription; scriptPath: string; scriptEnv: Record<string, string>}> {
  const target = await resolveRecipe(o.relaxRoot, o.recipe)
  if (!target.files.start) {
    throw new GymError(`no start_<recipe>_gym.sh in ${target.dir}`, {code: 'E_NO_START_SCRIPT', exit: ExitCode.usage, hint: `Generate the recipe with \`gymrecipe new ${o.recipe}\`.`})
  }
  const scriptPath = path.join(target.dir, target.files.start)
  if (!(await fsp.stat(scriptPath).catch(() => undefined))?.isFile()) {
    throw new GymError(`${scriptPath} does not exist`, {code: 'E_NO_START_SCRIPT', exit: ExitCode.usage, hint: `Generate the recipe with \`gymrecipe new ${o.recipe}\`.`, location: {file: scriptPath}})
  }
  const scriptEnv = await scriptEnvironment(target.dir, o.env)
  const desc = await describeService(target, scriptEnv)
  if (!desc.container) {
    throw usageError(`cannot tell which container ${target.files.start} creates (no recipe.yaml, no CONTAINER=... or --name in the script)`, 'Record the recipe with `gymrecipe new`, or set CONTAINER=<name> in the start script.', {file: scriptPath})
  }
  if (!desc.gymHost) {
    throw usageError('GYM_HOST is empty', `Set GYM_HOST in ${path.join(target.dir, 'env.sh')} (or the environment): a bare IP of this host reachable from every Relax worker.`, {file: path.join(target.dir, 'env.sh'), field: 'GYM_HOST'})
  }
  if (desc.gatewayPort === undefined) {
    throw usageError('the Gateway port is unknown', 'Set NEMO_GYM_GATEWAY_PORT in env.sh.', {file: path.join(target.dir, 'env.sh'), field: 'NEMO_GYM_GATEWAY_PORT'})
  }
  return {target, desc, scriptPath, scriptEnv}
}

function foreignContainer(desc: ServiceDescription, c: ContainerState): GymError {
  return new GymError(`Refusing to replace ${c.name} (${short(c.id)}, ${stateText(c)}): ${OWNERSHIP_LABEL}=${c.owner ?? '<unset>'}, expected ${desc.recipe}`, {
    code: 'E_FOREIGN_CONTAINER',
    exit: ExitCode.precondition,
    hint: `That container is not this recipe's; it was left untouched. Stop it if it is yours, or give the recipe another service.container name.`,
    details: {container: {name: c.name, id: c.id, owner: c.owner ?? null, state: stateText(c)}},
  })
}

function portInUse(port: number, label: string, host: string): GymError {
  return new GymError(`Port ${port} (${label}) is already in use on ${host}`, {
    code: 'E_PORT_IN_USE',
    exit: ExitCode.precondition,
    hint: `Find what holds it (ss -ltnp 'sport = :${port}'), stop it, or move the recipe: ${label === 'private Ray GCS' ? 'gymrecipe new <recipe> --update --gcs-port <port>' : 'gymrecipe new <recipe> --update --port-base <port>'}.`,
    details: {port, label, host},
  })
}

/** Every port of the recipe must be free before a fresh container binds them. */
async function checkPorts(desc: ServiceDescription, gymHost: string): Promise<void> {
  const hosts = [...new Set(['127.0.0.1', gymHost])]
  const busy = await Promise.all(desc.ports.map(async (p) => {
    for (const host of hosts) if (await portAcceptsConnections(host, p.port)) return {...p, host}
    return undefined
  }))
  const first = busy.find(Boolean)
  if (first) throw portInUse(first.port, first.label, first.host)
}

async function dryRunPlan(o: StartOptions, target: RecipeTarget, desc: ServiceDescription, scriptPath: string, gatewayUrl: string, timeoutS: number, builder: BuilderChoice): Promise<StartReport> {
  const docker = await tryDocker(dockerTarget(o.env))
  const existing = docker ? await inspectContainer(docker, desc.container!) : undefined
  const action = !docker
    ? 'unknown: the Docker daemon is not reachable (start would stop with exit 3)'
    : !existing
      ? `build ${desc.imageTag}, create ${desc.container}, wait up to ${timeoutS}s for ${gatewayUrl}/readyz`
      : existing.owner === desc.recipe
        ? `build ${desc.imageTag}, replace ${desc.container} (${short(existing.id)}, ${stateText(existing)}), wait up to ${timeoutS}s for ${gatewayUrl}/readyz`
        : `refuse: ${desc.container} carries ${OWNERSHIP_LABEL}=${existing.owner ?? '<unset>'} (exit 3, nothing touched)`
  return {
    recipe: target.id,
    dir: target.dir,
    dryRun: true,
    script: {path: scriptPath, command: ['bash', scriptPath], exitCode: null},
    container: {name: desc.container!, id: existing?.id ?? null, image: existing?.imageRef ?? null, image_id: existing?.imageId ?? null, state: existing ? stateText(existing) : 'absent', replaced: null},
    gatewayUrl: gatewayUrl,
    dockerBuilder: builder.builder,
    readiness: null,
    plan: {
      existing: existing ? {id: existing.id, owner: existing.owner ?? null, state: stateText(existing)} : null,
      action,
      wouldExit: !docker || (existing && existing.owner !== desc.recipe) ? ExitCode.precondition : ExitCode.ok,
      envShSourced: await pathExists(path.join(target.dir, 'env.sh')),
      ports: desc.ports,
      env: {...builder.env, [NO_WAIT_ENV]: '1', NEMO_GYM_IMAGE: desc.imageTag ?? '', GYM_HOST: desc.gymHost ?? '', NEMO_GYM_GATEWAY_PORT: String(desc.gatewayPort)},
      then: 'climb the ladder: static → data → service',
    },
    ladder: null,
  }
}

type StartOutcome =
  | {kind: 'ready'; answer: HttpAnswer; at: number}
  | {kind: 'died'; at: number}
  | {kind: 'timeout'; last: string}
  | {kind: 'script-failed'; exitCode: number | undefined; signal: string | undefined}
  | {kind: 'no-container'}
  | {kind: 'interrupted'}

/** What the run learned about its container from Docker events and inspection. */
class ContainerTracker {
  createdId: string | undefined
  startedAtMs: number | undefined
  diedAtMs: number | undefined
  /** Exit code from the die event (Docker puts it in the event's attributes). */
  diedExitCode: number | undefined
  destroyed = false
  replaced: string | undefined
  private wake: (() => void) | undefined
  private watch: EventWatch | undefined

  constructor(
    private readonly docker: Docker,
    private readonly name: string,
    private readonly recipe: string,
    private readonly previousId: string | undefined,
  ) {}

  async open(): Promise<void> {
    this.watch = await watchContainerEvents(this.docker, [`${OWNERSHIP_LABEL}=${this.recipe}`], (e) => this.onEvent(e))
  }

  close(): void {
    this.watch?.close()
  }

  /** Resolves at the next event (or after ms). */
  nextEvent(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = undefined
        resolve()
      }, ms)
      this.wake = () => {
        clearTimeout(timer)
        this.wake = undefined
        resolve()
      }
    })
  }

  private onEvent(e: ContainerEvent): void {
    if (e.name !== this.name && e.id !== this.createdId) return
    if (e.action === 'create' && e.name === this.name && e.id !== this.previousId) {
      this.createdId = e.id
      this.startedAtMs = undefined
      this.diedAtMs = undefined
      this.destroyed = false
    } else if (e.id === this.createdId) {
      if (e.action === 'start') this.startedAtMs = e.timeMs
      if (e.action === 'die') {
        this.diedAtMs = e.timeMs
        if (e.attributes.exitCode !== undefined) this.diedExitCode = Number(e.attributes.exitCode)
      }
      if (e.action === 'destroy') this.destroyed = true
    } else if (e.id === this.previousId && e.action === 'destroy') {
      this.replaced = e.id
    }
    this.wake?.()
  }

  /** Events can lag; confirm by inspecting the name (a container created by this run only). */
  async adopt(runStartedMs: number): Promise<void> {
    if (this.createdId) return
    const c = await inspectContainer(this.docker, this.name)
    if (c && c.id !== this.previousId && c.owner === this.recipe && Date.parse(c.created) >= runStartedMs - 2000) {
      this.createdId = c.id
      if (Date.parse(c.startedAt) > 0) this.startedAtMs = Date.parse(c.startedAt)
      if (!c.running && Date.parse(c.finishedAt) > 0) this.diedAtMs = Date.parse(c.finishedAt)
    }
  }
}

function abortPromise(signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (!signal) return
    if (signal.aborted) resolve()
    else signal.addEventListener('abort', () => resolve(), {once: true})
  })
}

async function waitForOutcome(
  o: StartOptions,
  docker: Docker,
  tracker: ContainerTracker,
  script: ScriptRun,
  gatewayUrl: string,
  timeoutS: number,
  runStartedMs: number,
): Promise<StartOutcome> {
  const pollMs = o.pollMs ?? 150
  let scriptExit: {exitCode: number | undefined; signal: string | undefined} | undefined
  void script.exited.then((e) => (scriptExit = e))
  let lastReadyz = '<no answer yet>'
  let probe: Promise<void> | undefined
  let ready: {answer: HttpAnswer; at: number} | undefined
  let lastInspect = 0
  let scriptExitedAt: number | undefined
  const aborted = abortPromise(o.signal)

  for (;;) {
    if (o.signal?.aborted) return {kind: 'interrupted'}
    const now = Date.now()
    // A crash is reported the moment Docker says so.
    if (tracker.createdId && (tracker.diedAtMs !== undefined || tracker.destroyed)) {
      return {kind: 'died', at: tracker.diedAtMs ?? now}
    }
    if (ready) return {kind: 'ready', ...ready}
    if (scriptExit && scriptExitedAt === undefined) scriptExitedAt = now
    if (scriptExit && scriptExit.exitCode !== 0) {
      // The script's own failure (refusal, port, build error, or its own readiness loop): events first.
      await tracker.adopt(runStartedMs)
      if (tracker.createdId && tracker.diedAtMs !== undefined) continue
      return {kind: 'script-failed', ...scriptExit}
    }
    if (scriptExit && !tracker.createdId) {
      await tracker.adopt(runStartedMs)
      if (!tracker.createdId && now - scriptExitedAt! > 5000) return {kind: 'no-container'}
    }
    if (tracker.createdId && tracker.startedAtMs === undefined && now - lastInspect > 1000) {
      // Fallback for a lost event stream: the container's own state.
      lastInspect = now
      const c = await inspectContainer(docker, tracker.createdId)
      if (!c) tracker.destroyed = true
      else if (c.running) tracker.startedAtMs = Date.parse(c.startedAt)
      else if (Date.parse(c.finishedAt) > 0) tracker.diedAtMs = Date.parse(c.finishedAt)
      continue
    }
    if (tracker.startedAtMs !== undefined) {
      if (now - lastInspect > 1000) {
        lastInspect = now
        const c = await inspectContainer(docker, tracker.createdId!)
        if (!c) tracker.destroyed = true
        else if (!c.running) tracker.diedAtMs = Date.parse(c.finishedAt) || now
        if (!c || !c.running) continue
      }
      if (now - tracker.startedAtMs > timeoutS * 1000) return {kind: 'timeout', last: lastReadyz}
      probe ??= readyz(gatewayUrl, 3000).then(({answer, error}) => {
        probe = undefined
        if (answer) {
          lastReadyz = `HTTP ${answer.status} ${answer.text.trim().slice(0, 400)}`
          if (answer.status === 200 && (answer.json as {ready?: unknown} | undefined)?.ready === true) ready = {answer, at: Date.now()}
        } else {
          lastReadyz = error ?? 'no answer'
        }
      })
    }
    await Promise.race([tracker.nextEvent(pollMs), probe ?? sleep(pollMs), aborted])
  }
}

function scriptFailure(script: ScriptRun, exit: {exitCode: number | undefined; signal: string | undefined}, desc: ServiceDescription, scriptPath: string): GymError {
  const err = script.tail('stderr', 60)
  const text = [...err, ...script.tail('stdout', 20)].join('\n')
  const refused = text.match(/Refusing to replace (\S+): ai\.relax\.recipe=(\S*)/)
  if (refused) {
    return new GymError(`Refusing to replace ${refused[1]}: ${OWNERSHIP_LABEL}=${refused[2]} (reported by ${path.basename(scriptPath)})`, {
      code: 'E_FOREIGN_CONTAINER',
      exit: ExitCode.precondition,
      hint: 'That container is not this recipe\'s; it was left untouched.',
      details: {container: {name: desc.container, owner: refused[2]}},
    })
  }
  const port = text.match(/Port (\d+) \(([^)]*)\) is already in use/)
  if (port) return portInUse(Number(port[1]), port[2], desc.gymHost ?? '127.0.0.1')
  const last = err.filter((l) => l.trim()).at(-1) ?? script.tail('stdout', 1)[0] ?? ''
  const code = exit.exitCode === 2 ? ExitCode.usage : exit.exitCode === 3 ? ExitCode.precondition : ExitCode.failure
  return new GymError(`${path.basename(scriptPath)} failed (${exit.exitCode === undefined ? `signal ${exit.signal}` : `exit ${exit.exitCode}`})${last ? `: ${last.trim()}` : ''}`, {
    code: 'E_START_SCRIPT',
    exit: code,
    hint: `Its last lines above name the cause; fix env.sh or the checkout, then run gymrecipe start ${desc.recipe} again (gymrecipe logs ${desc.recipe} shows the container's own output).`,
    details: {exit_code: exit.exitCode ?? null, signal: exit.signal ?? null, last_stderr_lines: err},
  })
}

/** What a running start knows, for the report of how it ended. */
interface StartRun {
  o: StartOptions
  docker: Docker
  tracker: ContainerTracker
  script: ScriptRun
  desc: ServiceDescription
  name: string
  /** The container of this name before the script ran, if any. */
  existing: Awaited<ReturnType<typeof inspectContainer>>
  runStartedMs: number
  timeoutS: number
}

async function containerReport(run: StartRun, id: string | undefined): Promise<ContainerReport> {
  const c = id ? await inspectContainer(run.docker, id) : undefined
  return {name: run.name, id: id ?? null, image: c?.imageRef ?? null, image_id: c?.imageId ?? null, state: id ? stateText(c) : 'not created', replaced: run.tracker.replaced ?? null}
}

/** Ctrl+C: stop the script, remove the container this start created (by id), and say what is left. */
async function interruptedStart(run: StartRun): Promise<GymError> {
  const {docker, tracker, script, desc, name, existing} = run
  await script.stop('SIGINT', 15_000)
  await tracker.adopt(run.runStartedMs)
  const id = tracker.createdId
  let state: string
  if (id) {
    const before = await inspectContainer(docker, id)
    const removed = before ? await removeContainer(docker, id) : false
    state = before ? (removed ? `removed (it was ${stateText(before)})` : 'already removed') : 'removed by the start script\'s interrupt trap'
  } else {
    state = 'not created (interrupted before the container was created)'
  }
  const previous = tracker.replaced ?? (existing && !(await inspectContainer(docker, existing.id)) ? existing.id : undefined)
  return new GymError(`Interrupted: stopped the start script (process group ${script.pid}); container ${name}${id ? ` (${short(id)})` : ''}: ${state}${previous ? `; the previous container ${short(previous)} had already been replaced` : ''}`, {
    code: 'E_INTERRUPTED',
    exit: ExitCode.interrupted,
    hint: `Run gymrecipe start ${desc.recipe} again when ready.`,
    details: {container: {name, id: id ?? null, state, replaced: previous ?? null}, script_pid: script.pid},
  })
}

/** The container died while starting: say so at once, then its logs; it is kept for inspection. */
async function diedDuringStart(run: StartRun, diedAt: number): Promise<GymError> {
  const {o, docker, tracker, script, desc, name} = run
  const id = tracker.createdId!
  const reportedAt = Date.now()
  const after = tracker.startedAtMs ? ` ${((diedAt - tracker.startedAtMs) / 1000).toFixed(1)}s after it started` : ''
  const code = tracker.diedExitCode === undefined ? '' : ` with exit code ${tracker.diedExitCode}`
  o.io.note(`${name} (${short(id)}) exited during start-up${after}${code}`)
  const logs = await containerLogTail(docker, id, LOG_LINES).catch(() => [] as string[])
  const c = await inspectContainer(docker, id)
  o.io.note(`Last ${logs.length} log lines of ${name} (${stateText(c)}):`)
  for (const line of logs) o.io.note(`  | ${line}`)
  await script.stop('SIGINT', 5000)
  return new GymError(`${name} exited during start-up${after}: ${stateText(c)}; its last log lines are above`, {
    code: 'E_CONTAINER_DIED',
    exit: ExitCode.failure,
    hint: `Fix the cause shown in the logs (the container is kept for inspection: gymrecipe logs ${desc.recipe}), then run start again.`,
    details: {container: await containerReport(run, id), exit_code: c?.exitCode ?? null, died_at: new Date(diedAt).toISOString(), reported_after_ms: reportedAt - diedAt, last_log_lines: logs},
  })
}

/** /readyz never said ready in time: the container is left running, with its last logs shown. */
async function notReady(run: StartRun, lastReadyz: string): Promise<GymError> {
  const {o, docker, tracker, script, desc, name, timeoutS} = run
  const id = tracker.createdId!
  const logs = await containerLogTail(docker, id, LOG_LINES).catch(() => [] as string[])
  o.io.note(`${name} did not become ready within ${timeoutS}s; last /readyz: ${lastReadyz}`)
  o.io.note(`Last ${logs.length} log lines of ${name}:`)
  for (const line of logs) o.io.note(`  | ${line}`)
  await script.stop('SIGINT', 5000)
  return new GymError(`${name} did not become ready within ${timeoutS}s (last /readyz: ${lastReadyz})`, {
    code: 'E_NOT_READY',
    exit: ExitCode.failure,
    hint: `/readyz stays 503 until the agent and resources servers answer; look for a server that never printed "Uvicorn running" above. The container is left running for inspection (gymrecipe logs ${desc.recipe} --follow); raise NEMO_GYM_START_TIMEOUT_S or --timeout if the image is just slow.`,
    details: {container: await containerReport(run, id), timeout_s: timeoutS, last_readyz: lastReadyz, last_log_lines: logs},
  })
}

/** Run the start script, watch the container natively, then climb the ladder up to service. */
export async function startRecipe(o: StartOptions): Promise<StartReport> {
  await assertGymRoot(o.gymRoot)
  const {target, desc, scriptPath} = await readStartInputs(o)
  const name = desc.container!
  const gatewayUrl = `http://${desc.gymHost}:${desc.gatewayPort}`
  const timeoutS = o.timeoutS ?? desc.startTimeoutS
  const builder = await chooseDockerBuilder(o.env)
  if (o.dryRun) return dryRunPlan(o, target, desc, scriptPath, gatewayUrl, timeoutS, builder)

  const docker = await requireDocker(dockerTarget(o.env))
  const existing = await inspectContainer(docker, name)
  if (existing && existing.owner !== desc.recipe) throw foreignContainer(desc, existing)
  // A running container of this recipe holds the ports itself; the script frees them by replacing it.
  if (!existing?.running) await checkPorts(desc, desc.gymHost!)

  const tracker = new ContainerTracker(docker, name, desc.recipe, existing?.id)
  await tracker.open()
  const runStartedMs = Date.now()
  o.io.note(`Running ${scriptPath} (${NO_WAIT_ENV}=1: gymrecipe watches ${name} and ${gatewayUrl}/readyz itself)`)
  o.io.note(builder.note)
  const script = runScript(scriptPath, {cwd: target.dir, env: {...o.env, ...builder.env, [NO_WAIT_ENV]: '1'}, onOutput: o.io.scriptOutput})
  let outcome: StartOutcome
  try {
    outcome = await waitForOutcome(o, docker, tracker, script, gatewayUrl, timeoutS, runStartedMs)
  } catch (error) {
    tracker.close()
    await script.stop('SIGINT', 10_000)
    throw error
  }
  tracker.close()

  const run: StartRun = {o, docker, tracker, script, desc, name, existing, runStartedMs, timeoutS}
  if (outcome.kind === 'interrupted') throw await interruptedStart(run)
  if (outcome.kind === 'died') throw await diedDuringStart(run, outcome.at)
  if (outcome.kind === 'timeout') throw await notReady(run, outcome.last)
  if (outcome.kind === 'script-failed') throw scriptFailure(script, outcome, desc, scriptPath)
  if (outcome.kind === 'no-container') {
    throw new GymError(`${path.basename(scriptPath)} exited 0 but no container named ${name} was created`, {
      code: 'E_START_SCRIPT',
      exit: ExitCode.failure,
      hint: `Does the script create ${name}? (recipe.yaml service.container)`,
    })
  }

  // Ready. A hand-written script that runs its own readiness loop finishes within its poll period.
  const elapsed = outcome.at - (tracker.startedAtMs ?? runStartedMs)
  o.io.note(`${name} (${short(tracker.createdId)}) is ready at ${gatewayUrl} (${(elapsed / 1000).toFixed(1)}s after the container started)`)
  if (script.running()) o.io.note(`Waiting for ${path.basename(scriptPath)} to finish its own readiness loop (it ignores ${NO_WAIT_ENV})`)
  const exit = await within(script.exited, timeoutS * 1000)
  if (!exit) await script.stop('SIGINT', 5000)
  else if (exit.exitCode !== 0) throw scriptFailure(script, exit, desc, scriptPath)

  const builtImageId = desc.imageTag ? await imageIdOf(docker, desc.imageTag) : undefined
  const report: StartReport = {
    recipe: target.id,
    dir: target.dir,
    dryRun: false,
    script: {path: scriptPath, command: ['bash', scriptPath], exitCode: exit?.exitCode ?? null},
    container: await containerReport(run, tracker.createdId),
    gatewayUrl: gatewayUrl,
    dockerBuilder: builder.builder,
    readiness: {
      ready: true,
      timeoutS: timeoutS,
      containerStartedAt: new Date(tracker.startedAtMs ?? runStartedMs).toISOString(),
      readyAt: new Date(outcome.at).toISOString(),
      elapsedMs: elapsed,
      readyz: verbatim(outcome.answer.json),
    },
    plan: null,
    ladder: null,
  }
  if (o.climb === false) return report

  const handoff = builtImageId ? {start: {builtImageId}} : undefined
  report.ladder = await runLadder(RUNG_DEFINITIONS, checkContext(target, {gymRoot: o.gymRoot, env: o.env, smoke: o.smoke, signal: o.signal}, handoff), {printer: o.printer, level: 'service'})
  return report
}

/** How a start that did not become ready ended, as an error that says why: the script failed, the container died, /readyz never answered, Ctrl+C. */
import type Docker from 'dockerode'
import path from 'node:path'
import {ExitCode, GymError} from '../../errors.js'
import type {ServiceDescription} from '../../ladder/index.js'
import {containerLogTail, inspectContainer, removeContainer} from '../../runtime/container.js'
import {OWNERSHIP_LABEL} from '../../runtime/docker.js'
import type {ScriptRun} from '../../runtime/script.js'
import type {StartOptions, ContainerReport} from './types.js'
import {LOG_LINES, short, stateText, portInUse} from './preflight.js'
import {ContainerTracker} from './watch.js'

export function scriptFailure(script: ScriptRun, exit: {exitCode: number | undefined; signal: string | undefined}, desc: ServiceDescription, scriptPath: string): GymError {
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
export interface StartRun {
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

export async function containerReport(run: StartRun, id: string | undefined): Promise<ContainerReport> {
  const c = id ? await inspectContainer(run.docker, id) : undefined
  return {name: run.name, id: id ?? null, image: c?.imageRef ?? null, imageId: c?.imageId ?? null, state: id ? stateText(c) : 'not created', replaced: run.tracker.replaced ?? null}
}

/** Ctrl+C: stop the script, remove the container this start created (by id), and say what is left. */
export async function interruptedStart(run: StartRun): Promise<GymError> {
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
export async function diedDuringStart(run: StartRun, diedAt: number): Promise<GymError> {
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
export async function notReady(run: StartRun, lastReadyz: string): Promise<GymError> {
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

/**
 * `gymrecipe start`: run the recipe's start script (host side: fresh image, ownership check,
 * replace only its own container) and watch the container natively while it does — Docker
 * events for create/start/die, fast /readyz polling — instead of trusting the script's 2-second
 * loop. Then climb static → data → service.
 */
import path from 'node:path'

import {ExitCode, GymError} from '../../errors.js'
import {checkContext, RUNG_DEFINITIONS, runLadder} from '../../ladder/index.js'
import {imageIdOf, inspectContainer} from '../../runtime/container.js'
import {dockerTarget, requireDocker} from '../../runtime/docker.js'
import {chooseDockerBuilder} from '../../runtime/docker-builder.js'
import {runScript} from '../../runtime/script.js'
import {assertGymRoot} from '../../contract/gym-config/paths.js'
import {verbatim} from '../../json-document.js'

import type {StartOptions, StartReport} from './types.js'
import {NO_WAIT_ENV, short, within, readStartInputs, foreignContainer, checkPorts, dryRunPlan} from './preflight.js'
import {type StartOutcome, ContainerTracker, waitForOutcome} from './watch.js'
import {scriptFailure, type StartRun, containerReport, interruptedStart, diedDuringStart, notReady} from './outcomes.js'

export * from './types.js'

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

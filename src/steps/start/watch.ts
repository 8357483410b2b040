/** Watching the start natively: Docker events for create/start/die, fast /readyz polling, the script's exit, Ctrl+C — whichever comes first. */
import {setTimeout as sleep} from 'node:timers/promises'
import type Docker from 'dockerode'
import {inspectContainer} from '../../runtime/container.js'
import {type ContainerEvent, type EventWatch, watchContainerEvents} from '../../runtime/docker-events.js'
import {OWNERSHIP_LABEL} from '../../runtime/docker.js'
import {type HttpAnswer, readyz} from '../../runtime/http.js'
import type {ScriptRun} from '../../runtime/script.js'
import type {StartOptions} from './types.js'

export type StartOutcome =
  | {kind: 'ready'; answer: HttpAnswer; at: number}
  | {kind: 'died'; at: number}
  | {kind: 'timeout'; last: string}
  | {kind: 'script-failed'; exitCode: number | undefined; signal: string | undefined}
  | {kind: 'no-container'}
  | {kind: 'interrupted'}

/** What the run learned about its container from Docker events and inspection. */
export class ContainerTracker {
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

export function abortPromise(signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (!signal) return
    if (signal.aborted) resolve()
    else signal.addEventListener('abort', () => resolve(), {once: true})
  })
}

export async function waitForOutcome(
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

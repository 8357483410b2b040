/** What every row of a call shares: the failure wording, timing, and the context's once-only parts (timeout queues, secrets, the rows in flight). */
import {onAbort} from '../abort.js'
import {DeadlineQueue} from '../deadlines.js'
import {clip} from '../clip.js'
import {Cancel} from '../../../runtime/call-transport.js'
import type {FailureKind, FailureStage} from '../types.js'
import type {RowCallContext, Failure, LifecycleEntry} from './types.js'

export const CANCEL_REASON = 'gymrecipe-call-cancelled'

export function httpFailure(status: number, route: string, body: string, stage: FailureStage, scrub: (t: string) => string, headers: Record<string, string | string[] | undefined> = {}): Failure {
  const kind: FailureKind = status >= 500 ? 'server_failed' : 'http_rejected'
  const snippet = body.trim() === '' ? '' : `: ${clip(scrub(body.trim()), 300)}`
  const location = headers.location === undefined ? undefined : String(headers.location)
  // Where it pointed, without userinfo or query (they may carry credentials).
  const target = location === undefined ? '' : `, a redirect to ${clip(scrub(location.replace(/^([a-z][a-z0-9+.-]*:\/\/)\S*@/i, '$1').replace(/[?#].*$/, '')), 200)}`
  const note = status >= 300 && status < 400 ? `${target} (redirects are not followed)` : ''
  return {kind, stage, route, reason: `POST ${route} answered HTTP ${status}${note}${snippet}`}
}

/** A JSON string, or null. */
export function q(text: string | null): string {
  return text === null ? 'null' : JSON.stringify(text)
}

/** The lifecycle entries as JSON, keys in their usual order. */
export function lifecycleText(entries: LifecycleEntry[]): string {
  let out = '['
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]
    out += `${i === 0 ? '' : ','}{"stage":${q(e.stage)}${e.step === undefined ? '' : `,"step":${e.step}`},"endpoint":${q(e.endpoint)},"route":${q(e.route)},"http_status":${e.http_status === null ? 'null' : e.http_status},"duration_ms":${JSON.stringify(e.duration_ms)}${e.error === undefined ? '' : `,"error":${q(e.error)}`}}`
  }
  return `${out}]`
}

export let isoMs = -1
export let isoText = ''
/** new Date().toISOString(), computed once per millisecond (many rows start and finish in the same one). */
export function isoNow(): string {
  const now = Date.now()
  if (now !== isoMs) {
    isoMs = now
    isoText = new Date(now).toISOString()
  }
  return isoText
}

export function ms(start: number): number {
  return Math.round((performance.now() - start) * 10) / 10
}

/**
 * What a context needs once, not per row: the shared timeout queues, the
 * list of global secrets, and the rows in initialize/execute (cancelled
 * together when the run is interrupted, through one listener on ctx.cancel).
 */
export interface ContextShared {
  rowTimeouts: DeadlineQueue
  cleanupTimeouts: DeadlineQueue
  secrets: readonly string[]
  active: Set<Cancel>
  /** JSON fragments that are the same for every row of the context. */
  texts: {
    artifactHead: string
    executeUrl: string
    executeRequestHead: string
    nameJson: string
    needsValue: boolean
    episode: boolean
  }
}
export const shared = new WeakMap<RowCallContext, ContextShared>()

export function sharedOf(ctx: RowCallContext): ContextShared {
  let found = shared.get(ctx)
  if (!found) {
    const active = new Set<Cancel>()
    found = {
      rowTimeouts: new DeadlineQueue(ctx.config.timeout * 1000),
      cleanupTimeouts: new DeadlineQueue((ctx.config.session?.cleanup_timeout ?? 30) * 1000),
      secrets: [...ctx.bearerTokens.values()],
      active,
      texts: {
        artifactHead: `{"schema":"gymrecipe.call.attempt/1","command":${q(ctx.config.kind)},"column":${q(ctx.config.name)},"attempt_id":`,
        executeUrl: ctx.config.endpoint + ctx.config.route,
        executeRequestHead: `{"method":"POST","url":${q(ctx.config.endpoint + ctx.config.route)},"headers":`,
        nameJson: q(ctx.config.name),
        needsValue: ctx.config.kind === 'harness' || ctx.config.response_protocol === 'gym-episode' || ctx.config.response_fields !== undefined,
        episode: ctx.config.kind === 'resource' && ctx.config.response_protocol === 'gym-episode',
      },
    }
    onAbort(ctx.cancel, () => {
      for (const row of [...active]) row.abort(CANCEL_REASON)
    })
    shared.set(ctx, found)
  }
  return found
}

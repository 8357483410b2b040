/**
 * Failure triage when rewards carry no signal: tell
 * apart, from statuses, error codes and log lines,
 *
 * - lifecycle:   the callback/lifecycle failed (cleanup_unverified, 410, lease_expired, ...);
 * - verifier:    the verifier never ran or could not parse the response (reward null,
 *                truncated/deadline, agent_error before verification, `<think>` or empty answers);
 * - environment: the environment failed (seed_session/verify/tool server errors, 5xx);
 * - model:       every trial completed and was scored, and the model answered wrongly.
 */
import {digestText, type DumpSample, type LogDigest, rewardNumber} from './outputs.js'

export type Verdict = 'lifecycle' | 'verifier' | 'environment' | 'model'

export const VERDICT_TEXT: Record<Verdict, string> = {
  lifecycle: 'callback/lifecycle failed',
  verifier: 'the verifier never ran or could not parse the response',
  environment: 'the environment failed',
  model: 'the model answered wrongly',
}

const ORDER: Verdict[] = ['lifecycle', 'environment', 'verifier', 'model']

// A callback cancelled at abort reaches the agent as a 500 (the Gateway logs CancelledError, and
// Gym's middleware "RuntimeError: No response returned."); a streaming Messages client sees the
// loss as an SSE error event inside a 200.
const LIFECYCLE = /cleanup_unverified|cleanup_failed|cleanup_probe_failed|lease_expired|service_shutdown|\b410\b|callback capability is (?:unavailable|unknown)|no longer active|CancelledError|No response returned\.|event: error|"type":\s*"api_error"|ended aborted|model call failed|model callback/
const VERIFIER = /deadline_exceeded|without a reward|reward[=: ]+None|reward[=: ]+null|\btruncated\b/i
const ENVIRONMENT = /seed_session failed|verify failed with HTTP|resources? server|HTTP 5\d\d|Traceback|KeyError|No container file|unknown tool/i

export interface Triage {
  verdict: Verdict
  text: string
  counts: Record<Verdict, number>
  examples: string[]
  errorCodes: Record<string, number>
}

/** The real Gateway's trial error is often the code alone ({"code": "agent_error"}): what each code means. */
const CODE_VERDICT: Record<string, Verdict> = {
  cleanup_unverified: 'lifecycle',
  cleanup_failed: 'lifecycle',
  cleanup_probe_failed: 'lifecycle',
  lease_expired: 'lifecycle',
  service_shutdown: 'lifecycle',
  aborted: 'lifecycle',
  deadline_exceeded: 'verifier',
  // The agent's /run failed before anything was verified.
  agent_error: 'verifier',
}

/** Classify one failure text (a terminal trace's error, a thin-client failure line). */
export function classifyFailure(text: string): Verdict {
  // The Gateway's first cause decides: cleanup_unverified caused by agent_error is the agent's
  // failure, reported through a cleanup that had nothing to confirm.
  const cause = /['"]cause['"]\s*:\s*['"]([a-z_]+)['"]/.exec(text)?.[1]
  if (cause && CODE_VERDICT[cause]) return CODE_VERDICT[cause]
  // What the text says (a cancelled callback, a 410, a seed_session 500) is more precise than
  // the code; a bare code is all the real Gateway gives.
  if (LIFECYCLE.test(text)) return 'lifecycle'
  if (VERIFIER.test(text)) return 'verifier'
  if (ENVIRONMENT.test(text)) return 'environment'
  const codes: Record<string, number> = {}
  codesIn(text, codes)
  return Object.keys(codes).map((c) => CODE_VERDICT[c]).find(Boolean) ?? 'verifier'
}

function classifySample(s: DumpSample): {verdict: Verdict; why: string} {
  const reward = rewardNumber(s.reward)
  const response = typeof s.response === 'string' ? s.response : ''
  if (reward === null) return {verdict: 'verifier', why: `sample ${String(s.sample_index)}: reward ${JSON.stringify(s.reward)}`}
  if (s.status === 'truncated') return {verdict: 'verifier', why: `sample ${String(s.sample_index)}: status truncated`}
  if (response.includes('<think>')) return {verdict: 'verifier', why: `sample ${String(s.sample_index)}: the response still contains <think> (reasoning parser missing?)`}
  if (response.trim() === '') return {verdict: 'verifier', why: `sample ${String(s.sample_index)}: empty response`}
  return {verdict: 'model', why: `sample ${String(s.sample_index)}: completed and scored ${reward}`}
}

function codesIn(text: string, into: Record<string, number>): void {
  for (const m of text.matchAll(/['"]code['"]\s*:\s*['"]([a-z_]+)['"]/g)) into[m[1]] = (into[m[1]] ?? 0) + 1
  for (const m of text.matchAll(/error code ([a-z_]+)/g)) into[m[1]] = (into[m[1]] ?? 0) + 1
}

/**
 * Triage from the committed samples, the terminal traces (dropped samples) and the thin-client
 * failure lines of the job log.
 */
export function triage(samples: DumpSample[], traces: Array<Record<string, unknown>>, log: string | LogDigest | undefined): Triage {
  const counts: Record<Verdict, number> = {lifecycle: 0, environment: 0, verifier: 0, model: 0}
  const examples: string[] = []
  const errorCodes: Record<string, number> = {}
  const note = (verdict: Verdict, why: string) => {
    counts[verdict]++
    if (examples.length < 5) examples.push(`${VERDICT_TEXT[verdict]}: ${why}`)
  }
  for (const trace of traces) {
    const text = typeof trace.error === 'string' ? trace.error : JSON.stringify(trace)
    codesIn(text, errorCodes)
    note(classifyFailure(text), text.slice(0, 240))
  }
  // Thin-client failures that left no trace file (other Relax versions only log them).
  if (traces.length === 0 && log !== undefined) {
    const failures = typeof log === 'string' ? digestText(log, '').thinClientFailures : log.thinClientFailures
    for (const line of failures) {
      codesIn(line, errorCodes)
      note(classifyFailure(line), line.trim().slice(0, 240))
    }
  }
  for (const sample of samples) {
    const {verdict, why} = classifySample(sample)
    note(verdict, why)
  }
  const verdict = ORDER.find((v) => counts[v] > 0) ?? 'verifier'
  const parts = ORDER.filter((v) => counts[v] > 0).map((v) => `${counts[v]} ${v}`)
  const codes = Object.entries(errorCodes).map(([c, n]) => `${c}×${n}`).join(', ')
  return {
    verdict,
    text: `triage: ${VERDICT_TEXT[verdict]} (${parts.join(', ') || 'no samples'}${codes ? `; error codes ${codes}` : ''})`,
    counts,
    examples,
    errorCodes,
  }
}

/**
 * Turn a trial run into check results, each naming the expectation, the actual value and
 * the trial snapshot's error code. Evidence never carries the scripted model's token.
 */
import {setTimeout as sleep} from 'node:timers/promises'
import {randomBytes} from 'node:crypto'
import {promises as fsp} from 'node:fs'

import type {RecipeContract} from '../../contract/types.js'
import {readContainerFile} from '../../runtime/container-file.js'
import {type GatewayClient, httpJson, trialCounts} from '../../runtime/gateway-trials.js'
import {objectFields} from '../../runtime/http.js'
import type {CallbackRecord} from '../../runtime/scripted-model.js'
import type {NamedResult} from '../types.js'
import {allowlistCovers} from './context.js'
import {type AbortRun, type TrialRun, scalarReward} from './engine.js'
import {codeOf, messageOf} from '../../errors.js'


const LIFECYCLE_CODES: Record<string, string> = {
  cleanup_unverified: 'cleanup was not confirmed: no cleanup probe URL, or the probe did not answer {"clean": true}',
  cleanup_failed: 'a cleanup POST (abort/force URL) failed and the probe did not confirm',
  cleanup_probe_failed: 'the cleanup probe itself failed (transport error, non-2xx or non-JSON)',
  lease_expired: 'the lease was not renewed in time',
  deadline_exceeded: 'the trial ran past its deadline (the verifier never ran)',
  service_shutdown: 'the Gym service shut down during the trial',
  aborted: 'the trial was aborted',
  agent_error: 'the agent /run failed (non-2xx, non-JSON or not an object); see docker logs for the traceback',
}

function errorCode(run: TrialRun): string | null {
  const code = run.snapshot?.error?.code
  return typeof code === 'string' ? code : null
}

/** The first cause of a Gateway error: its `cause` (a code, or an object with one), else its own code. */
export function firstCause(error: {code?: unknown; cause?: unknown} | null | undefined): string | null {
  if (!error) return null
  const cause = typeof error.cause === 'string' ? error.cause : codeOf(error.cause)
  if (cause) return cause
  return typeof error.code === 'string' ? error.code : null
}

/**
 * "error code X (<meaning>)", and when the Gateway says what caused it, the cause first: "agent_error
 * (<meaning>), reported as cleanup_unverified (<meaning>)". "" when the snapshot has no error.
 */
export function describeError(run: TrialRun): string {
  const error = run.snapshot?.error
  if (!error) return ''
  const code = typeof error.code === 'string' ? error.code : 'unknown'
  const explain = (c: string) => (LIFECYCLE_CODES[c] ? ` (${LIFECYCLE_CODES[c]})` : '')
  const message = typeof error.message === 'string' ? ` — ${error.message.slice(0, 300)}` : ''
  const cause = firstCause(error)
  if (cause && cause !== code) return `error code ${cause}${explain(cause)}, reported as ${code}${explain(code)}${message}`
  return `error code ${code}${explain(code)}${message}`
}

function evidence(run: TrialRun, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    request_id: run.requestId,
    status: run.snapshot?.status ?? null,
    reward: run.snapshot?.reward ?? null,
    metrics: run.snapshot?.metrics ?? null,
    error: run.snapshot?.error ?? null,
    error_code: errorCode(run),
    tool_result_history: run.history,
    callbacks: run.callbacks.map((c) => ({index: c.index, path: c.path, status: c.status, tool_results: c.toolResults, tools: c.tools, stream: c.stream, ...(c.error ? {error: c.error} : {})})),
    renewals: run.renewals,
    renew_failures: run.renewFailures,
    timed_out: run.timedOut,
    elapsed_ms: run.elapsedMs,
    ...extra,
  }
}

export function evaluateCreate(
  run: TrialRun,
  o: {requestId: string; callbackHost: string; callbackBaseUrl: string; env: Record<string, string>; kind: 'trial' | 'abort'},
): NamedResult {
  const what = o.kind === 'trial' ? 'trial' : 'second (to-be-aborted) trial'
  const id = 'trial.created'
  const title = 'Trial created'
  const {status, body, error} = run.create
  const said = objectFields(run.create.body).detail
  const detail = typeof said === 'string' ? said : JSON.stringify(said ?? body ?? null)
  const ev = {request_id: o.requestId, http_status: status, detail: said ?? body ?? error ?? null, callback_base_url: o.callbackBaseUrl}
  if (status === 202) return {id, title, status: 'pass', message: `${what} ${o.requestId} accepted (202), callbacks to ${o.callbackBaseUrl}`, evidence: ev}
  if (status === 0) return {id, title, status: 'fail', message: `POST /v1/trials did not answer: ${error}`, hint: 'Check that the Gateway is running and reachable from this machine.', evidence: ev}
  let hint: string | undefined
  if (status === 400 && /allowlist/i.test(detail)) {
    const {configured, covered} = allowlistCovers(o.env, o.callbackHost)
    hint = `The callback host ${o.callbackHost} is not in the Gateway's callback allowlist (env.sh: ${configured}${covered === false ? `, which does not contain ${o.callbackHost}` : ''}). ` +
      'Add a strict CIDR or host that contains it to env.sh and restart the service, or pass --callback-host with an address of this machine inside the allowlist.'
  } else if (status === 400) {
    hint = 'The registered Gateway configuration refuses the request: compare environment/config, interrupt_policy and deadline_s in recipe.yaml with the running service (restart it after a change).'
  } else if (status === 422) {
    hint = 'The create payload does not follow the relax-nemo-gym/v1 protocol; this is a gymrecipe or Gateway version mismatch.'
  } else if (status === 429) {
    hint = 'The environment queue is full: other trials are still running (a stale requester?); check /readyz trials and active_trials.'
  }
  return {id, title, status: 'fail', message: `POST /v1/trials answered ${status}: ${detail}`, hint, evidence: ev}
}

export function evaluateStatus(run: TrialRun, expected: string): NamedResult {
  const id = 'trial.status'
  const title = 'Trial status'
  const actual = run.snapshot?.status ?? null
  const err = describeError(run)
  if (run.timedOut) {
    return {id, title, status: 'fail', message: `the trial did not reach a terminal state in time; gymrecipe aborted it (now ${actual})${err ? `; ${err}` : ''}`, evidence: evidence(run)}
  }
  if (actual === expected) return {id, title, status: 'pass', message: `status ${actual}${err ? ` (${err})` : ''}`, evidence: evidence(run)}
  return {id, title, status: 'fail', message: `status: expected ${expected}, got ${actual}${err ? `; ${err}` : ''}`, evidence: evidence(run)}
}

export function evaluateReward(run: TrialRun, expected: number): NamedResult {
  const id = 'trial.reward'
  const title = 'Trial reward'
  const raw = run.snapshot?.reward ?? null
  const actual = scalarReward(raw)
  const err = describeError(run)
  if (actual !== null && Math.abs(actual - expected) < 1e-9) return {id, title, status: 'pass', message: `reward ${actual}`, evidence: evidence(run)}
  const why = raw === null ? ' (reward null: the verifier never ran or its result was lost)' : ''
  return {id, title, status: 'fail', message: `reward: expected ${expected}, got ${JSON.stringify(raw)}${why}${err ? `; ${err}` : ''}`, evidence: evidence(run)}
}

export function evaluateMetrics(run: TrialRun, expected: {tool_calls: number; tool_outputs: number}): NamedResult {
  const id = 'trial.tool-metrics'
  const title = 'Tool calls and tool outputs'
  const metrics = run.snapshot?.metrics ?? {}
  const calls = metrics.tool_calls
  const outputs = metrics.tool_outputs
  const problems: string[] = []
  if (calls !== expected.tool_calls) problems.push(`tool_calls: expected ${expected.tool_calls}, got ${calls ?? 'none'}`)
  if (outputs !== expected.tool_outputs) problems.push(`tool_outputs: expected ${expected.tool_outputs}, got ${outputs ?? 'none'}`)
  if (problems.length === 0) return {id, title, status: 'pass', message: `tool_calls=${calls} tool_outputs=${outputs}`, evidence: evidence(run)}
  const err = describeError(run)
  return {id, title, status: 'fail', message: `${problems.join('; ')}${err ? `; ${err}` : ''}`, evidence: evidence(run)}
}

export function evaluateHistory(
  run: TrialRun,
  expected: number[],
  rejected: CallbackRecord[],
  o: {protocol: string; servedPath: string},
): NamedResult {
  const id = 'trial.history'
  const title = 'Tool results fed back (callback history)'
  const same = run.history.length === expected.length && run.history.every((n, i) => n === expected[i])
  const problems: string[] = []
  if (rejected.length > 0) {
    problems.push(`the scripted model answered 401 to ${rejected.length} callback(s): the request did not carry "Authorization: Bearer <the trial's api_key>" (${[...new Set(rejected.map((r) => r.error))].join('; ')})`)
  }
  const wrongPath = run.callbacks.filter((c) => c.status === 404)
  if (wrongPath.length > 0) problems.push(`callback(s) to ${[...new Set(wrongPath.map((c) => c.path))].join(', ')} got 404: the ${o.protocol} protocol is served at ${o.servedPath}`)
  const beyond = run.callbacks.filter((c) => c.error?.startsWith('no scripted turn'))
  if (beyond.length > 0) problems.push(`${beyond.length} callback(s) came after the script ended (${beyond[0].error}): the agent did not stop where the scripted turns expect`)
  if (same && problems.length === 0) {
    return {id, title, status: 'pass', message: `tool-result history [${run.history.join(', ')}] over ${run.history.length} callback(s)`, evidence: evidence(run, {rejected: rejected.length})}
  }
  if (!same) {
    let why = ''
    if (run.history.length > 1 && run.history.slice(1).every((n) => n === 0)) why = ': tool results were never fed back to the model (rollout prefix, rollout id, Gateway model or observability_enabled is wrong)'
    else if (run.history.length === 0 && rejected.length === 0) why = ': the Gateway never called the scripted model back'
    else if (run.history.length < expected.length) why = ': the trial ended early'
    problems.unshift(`tool-result history: expected [${expected.join(', ')}], got [${run.history.join(', ')}]${why}`)
  }
  const err = describeError(run)
  return {id, title, status: 'fail', message: `${problems.join('; ')}${err ? `; trial ${run.snapshot?.status ?? 'without a status'}, ${err}` : ''}`, evidence: evidence(run, {rejected: rejected.length})}
}

export function evaluateToolsOffered(run: TrialRun): NamedResult {
  const id = 'trial.tools-offered'
  const title = 'Every callback offers the tools'
  const bare = run.callbacks.filter((c) => c.tools <= 0)
  if (run.callbacks.length > 0 && bare.length === 0) return {id, title, status: 'pass', message: `every callback carried a tools list (${run.callbacks.map((c) => c.tools).join(', ')} tools)`}
  if (run.callbacks.length === 0) return {id, title, status: 'fail', message: 'no callback reached the scripted model', evidence: evidence(run)}
  return {
    id, title, status: 'fail',
    message: `callback(s) ${bare.map((c) => c.index).join(', ')} carried no tools: the model could not see its tools`,
    hint: 'The converter or the run adapter dropped responses_create_params.tools; train from the raw file and keep tools in metadata.',
    evidence: evidence(run),
  }
}

const ARTIFACT_KEYS = ['protocol_version', 'request_id', 'evaluation', 'openhands_result', 'response_output', 'files']

export async function evaluateArtifact(run: TrialRun, artifactRoot: string | undefined, contract: RecipeContract): Promise<NamedResult> {
  const id = 'trial.artifact'
  const title = 'Trial artifact written'
  const ref = run.snapshot?.artifact_ref
  if (!ref) {
    return {
      id, title, status: 'fail',
      message: `artifact_ref is null although metadata.capture_artifacts was sent (NEMO_GYM_ARTIFACT_ROOT=${artifactRoot} in the recipe environment)`,
      hint: 'The Gateway writes artifacts only when NEMO_GYM_ARTIFACT_ROOT is set in the service; pass it to the container.',
      evidence: evidence(run),
    }
  }
  let text: string | undefined
  let where = ref
  try {
    text = await fsp.readFile(ref, 'utf8')
  } catch {
    try {
      text = await readContainerFile(contract.service.container, ref, {recipeId: contract.id})
      where = `${contract.service.container}:${ref}`
    } catch (error) {
      return {id, title, status: 'fail', message: `artifact ${ref} is not readable on this host or in ${contract.service.container}: ${messageOf(error)}`, evidence: evidence(run)}
    }
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return {id, title, status: 'fail', message: `artifact ${where} is not JSON`, evidence: evidence(run)}
  }
  const doc = objectFields(parsed)
  if (doc.protocol_version !== 'relax-nemo-gym/artifact-v1' || doc.request_id !== run.requestId) {
    return {id, title, status: 'fail', message: `artifact ${where} has protocol_version=${String(doc.protocol_version)} request_id=${String(doc.request_id)}, expected relax-nemo-gym/artifact-v1 and ${run.requestId}`, evidence: evidence(run)}
  }
  // The real Gateway's manifest: status and reward live in the trial snapshot, not here.
  const missing = ARTIFACT_KEYS.filter((k) => !(k in doc))
  if (missing.length > 0) {
    return {id, title, status: 'fail', message: `artifact ${where} lacks ${missing.join(', ')} (the Gateway's manifest has ${ARTIFACT_KEYS.join(', ')})`, evidence: {artifact_ref: ref, keys: Object.keys(doc)}}
  }
  const files = Array.isArray(doc.files) ? doc.files.length : 0
  return {id, title, status: 'pass', message: `artifact ${where}: evaluation ${JSON.stringify(doc.evaluation).slice(0, 120)}, ${files} file(s)`, evidence: {artifact_ref: ref, keys: Object.keys(doc)}}
}

export function evaluateAbort(run: AbortRun): NamedResult {
  const id = 'trial.cleanup-abort'
  const title = 'Aborted trial cleaned up'
  const status = run.snapshot?.status ?? null
  const code = errorCode(run)
  const ev = evidence(run, {held_at_callback: run.heldAt, reached_hold: run.reachedHold, abort_http_status: run.abort?.status ?? null})
  if (!run.reachedHold) {
    return {
      id, title, status: 'fail',
      message: `the second trial never reached callback ${run.heldAt} (ended ${status}${code ? `, error code ${code}` : ''}), so it could not be aborted mid-flight`,
      evidence: ev,
    }
  }
  if (run.abort?.status !== 202) {
    return {id, title, status: 'fail', message: `POST /v1/trials/{id}/abort answered ${run.abort ? run.abort.status : 'nothing'} (expected 202)`, evidence: ev}
  }
  if (status === 'aborted' && code === 'aborted') {
    return {id, title, status: 'pass', message: `aborted mid-flight at callback ${run.heldAt}; the Gateway's cleanup probe confirmed {"clean": true} (status aborted, error code aborted)`, evidence: ev}
  }
  const err = describeError(run)
  return {
    id, title, status: 'fail',
    message: `aborted trial ended ${status}${err ? ` with ${err}` : ''}; expected aborted (not cleanup_unverified)`,
    hint: code?.startsWith('cleanup_')
      ? 'A lifecycle error, not a model failure: the environment did not free the session. Check that the image has the /cleanup/{rollout_id} endpoints and that the abort/force/probe URLs are registered.'
      : undefined,
    evidence: ev,
  }
}

/**
 * GET the cleanup probe URL. The Gateway never reveals a trial's rollout id, so the probe is
 * asked about a fresh id: it must answer the probe contract, JSON {"clean": true}.
 */
export async function evaluateProbe(serverUrl: string, pathTemplate: string): Promise<NamedResult> {
  const id = 'trial.cleanup-probe'
  const title = 'Cleanup probe answers {"clean": true}'
  const rolloutId = `${randomBytes(16).toString('hex')}-0`
  const url = serverUrl + pathTemplate.replace('{rollout_id}', rolloutId)
  const shown = serverUrl + pathTemplate
  const answer = await httpJson('GET', url, undefined, 10_000)
  const ev = {probe_url: shown, http_status: answer.status, body: answer.body ?? answer.error ?? null}
  if (answer.status === 200 && objectFields(answer.body).clean === true) {
    return {id, title, status: 'pass', message: `GET ${shown} answered {"clean": true}`, evidence: ev}
  }
  const got = answer.status === 0 ? `no answer (${answer.error})` : `${answer.status} ${JSON.stringify(answer.body)}`
  return {
    id, title, status: 'fail',
    message: `GET ${shown} answered ${got}; expected 200 {"clean": true}`,
    hint: 'The environment must implement the cleanup probe (GET) next to its abort endpoint (POST); rebuild the image from the current Dockerfile.',
    evidence: ev,
  }
}

export async function evaluateGatewayClean(gateway: GatewayClient, before: number | null, main: TrialRun | undefined): Promise<NamedResult[]> {
  const id = 'trial.gateway-clean'
  const title = 'Gateway clean afterwards (active_trials back to 0)'
  // Give the Gateway a moment to settle trials it is still finalizing.
  let ready = await gateway.readyz()
  for (let i = 0; i < 12 && ready.status === 200 && (ready.body?.active_trials ?? 0) > 0; i++) {
    await sleep(250)
    ready = await gateway.readyz()
  }
  const active = ready.body?.active_trials
  const ev = {readyz: ready.body ?? ready.error ?? null, active_trials_before: before, request_id: main?.requestId ?? null}
  if (ready.status === 0 || typeof active !== 'number') {
    return [{id, title, status: 'fail', message: `/readyz did not answer after the trial (${ready.status === 0 ? ready.error : `HTTP ${ready.status}`})`, evidence: ev}]
  }
  if (active === 0) return [{id, title, status: 'pass', message: `active_trials=0 (${trialCounts(ready.body)})`, evidence: ev}]
  const own = main && main.snapshot && main.snapshot.status && !['completed', 'truncated', 'aborted', 'failed'].includes(main.snapshot.status) ? ` (the trial ${main.requestId} itself is still ${main.snapshot.status})` : ''
  return [{
    id, title, status: 'fail',
    message: `active_trials=${active} after the trial${before === null ? '' : ` (${before} before it started)`}${own}: a trial leaked or a stale requester is still submitting`,
    hint: 'Find the requester (docker logs <container> | grep "POST /v1/trials"), stop it, restart the service, and check /readyz trials and active_trials are 0.',
    evidence: ev,
  }]
}

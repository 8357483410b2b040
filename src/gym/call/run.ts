import {createHash} from 'node:crypto'
import path from 'node:path'

import {codeOf, GymError, messageOf, ExitCode} from '../../errors.js'
import {type AtomicTarget, openAtomicTarget} from '../../runtime/fs.js'
import {onAbort} from './abort.js'
import {bearerTokens, type MissingToken, readBearerTokens} from './config.js'
import {EvidenceDir, type JournalHeader, type RecordedRows, SYNC_BYTES} from './evidence.js'
import {LineReader} from '../../json/jsonl-reader.js'
import {inputUnreadable, isEmptyObjectText, scanRows} from './input.js'
import {parseFast, parseJson, stringifyJson} from '../../json/index.js'
import type {RowCallContext, RowOutcome} from './lifecycle/index.js'
import {CallPass, inputChanged, OrderedOutput, outputLine, type RunWindow, runWindow} from './pass.js'
import {Limiter} from './limiter.js'
import {buildRowPlan} from './request.js'
import {type HttpTransport, pooledHttpTransport} from '../../runtime/call-transport.js'
import type {CallConfig, FailureKind, ResourceEnvelope} from './types.js'
import {verbatim} from '../../json-document.js'

export interface CallProgress {
  total: number
  finished: number
  completed: number
  failed: number
  resumed: number
  inFlight: number
  elapsedMs: number
}

export interface RunCallOptions {
  config: CallConfig
  /** Input rows (JSONL). */
  input: string
  /** Output JSONL; required unless dryRun. */
  output?: string
  /** Evidence directory; required unless dryRun. */
  evidenceDir?: string
  /** Skip rows the journal in evidenceDir records as finished. */
  resume?: boolean
  /** Validate config and rows and build requests; call nothing, write nothing. */
  dryRun?: boolean
  /** Aborting it interrupts the run: queued rows are not started, in-flight rows are cancelled and cleaned up. */
  signal?: AbortSignal
  transport?: HttpTransport
  env?: NodeJS.ProcessEnv
  onProgress?: (progress: CallProgress) => void
  /** Memory bounds of the run (default runWindow(max_parallel_requests)); tests make them small. */
  window?: RunWindow
}

export interface InvalidRequest {
  line: number
  row_id: unknown
  route: string | null
  reason: string
}

export interface CallSummary {
  command: CallConfig['kind']
  column: string
  input: string
  output: string | null
  evidence_dir: string | null
  dry_run: boolean
  interrupted: boolean
  rows: number
  /** Rows with final output columns (including rows finished by an earlier, interrupted run). */
  finished: number
  /** Rows taken from the journal of an earlier run instead of being called again. */
  resumed: number
  completed: number
  failed: number
  /** In-flight rows cancelled by the interruption (cleanup ran, evidence written, not finished). */
  cancelled: number
  /** Queued rows never started because of the interruption. */
  not_started: number
  failure_kinds: Partial<Record<FailureKind, number>>
  episodes?: {completed: number; failed: number}
  answers?: {answered: number; unanswered: number}
  /** Dry run only: rows whose requests cannot be built (at most 20 listed). */
  invalid_requests?: InvalidRequest[]
  invalid_request_count?: number
  /** Dry run only: the first row's execute request. */
  first_request?: {url: string; body: unknown} | null
  /** Dry run only: bearer-token variables that are unset or empty (names only); the real run would stop on the first (exit 2). */
  missing_tokens?: MissingToken[]
  duration_ms: number
  rows_per_second: number
}

/** A validated input row (readRows keeps them all; runCall streams instead). */
interface InputRow {
  index: number
  line: number
  /** The row's JSON text, trimmed; output lines extend it so input bytes are kept as they are. */
  raw: string
  empty: boolean
}

/**
 * Read and validate every row of a JSONL file into memory (blank lines are
 * skipped; anything else must be a JSON object without an output column).
 * runCall does not use this: it validates in a streaming pass and streams the
 * rows again while calling them.
 */
export async function readRows(file: string, config: CallConfig): Promise<{rows: InputRow[]; sha256: string}> {
  const {sha256} = await scanRows(file, config)
  const rows: InputRow[] = []
  const reader = await LineReader.open(file).catch((error) => {
    throw inputUnreadable(file, error)
  })
  try {
    for (let lines = await reader.nextTexts(); lines; lines = await reader.nextTexts()) {
      const first = reader.firstLine
      for (let n = 0; n < lines.length; n++) {
        const raw = lines[n].trim()
        if (raw !== '') rows.push({index: rows.length, line: first + n, raw, empty: isEmptyObjectText(raw)})
      }
    }
  } finally {
    await reader.close()
  }
  return {rows, sha256}
}

/** Config fingerprint for resume; the tuning knobs may change between an interrupted run and its resume. */
export function configFingerprint(config: CallConfig): string {
  const {max_parallel_requests: _m, timeout: _t, queue_timeout: _q, ...rest} = config
  const session = rest.session ? {...rest.session, cleanup_timeout: undefined} : undefined
  return createHash('sha256')
    .update(stringifyJson({...rest, session}))
    .digest('hex')
}

/**
 * Call the configured service once per row and write the output JSONL (input
 * order, one envelope column per row; harness: answer + evidence columns).
 */
export async function runCall(options: RunCallOptions): Promise<CallSummary> {
  const started = performance.now()
  const {config} = options
  // A dry run previews without the secrets and lists the missing ones; a real run stops on the first.
  const tokens = options.dryRun ? bearerTokens(config, options.env ?? process.env) : {tokens: readBearerTokens(config, options.env ?? process.env), missing: []}
  // pass 1: validate every row and fingerprint the file before anything is called; nothing is kept
  const {rows, sha256} = await scanRows(options.input, config)
  const summary = emptySummary(options, rows)
  const finish = (): CallSummary => {
    summary.duration_ms = Math.round(performance.now() - started)
    const called = summary.finished - summary.resumed
    summary.rows_per_second = summary.duration_ms > 0 ? Math.round((called / summary.duration_ms) * 1000 * 10) / 10 : 0
    return summary
  }
  if (options.dryRun) {
    Object.assign(summary, await previewRequests(options), {missing_tokens: tokens.missing})
    return finish()
  }
  const {output, evidenceDir} = requireOutputs(options)
  const tally = new Tally(summary, config)

  const header: JournalHeader = {
    journal: 'gymrecipe.call.journal/1',
    command: config.kind,
    column: config.name,
    config_sha256: configFingerprint(config),
    input_sha256: sha256,
    rows,
    started_at: new Date().toISOString(),
  }
  // The output is checked (a link, a folder) before the evidence folder is made, so a refused
  // output leaves nothing behind.
  const target = await openAtomicTarget(output)
  const {evidence, previous} = await EvidenceDir.open(evidenceDir, header, Boolean(options.resume), (columns) => tally.recorded(columns)).catch(async (error) => {
    await target.abort()
    throw error
  })
  // synced as it grows, like the evidence, so little is left to sync when the run ends (a pipe or
  // a device is written in place and never synced)
  const ordered = new OrderedOutput(target.createStream({flush: !target.direct, syncEvery: SYNC_BYTES}))
  const {interrupted, unexpected} = await callEveryRow({options, tokens: tokens.tokens, evidence, previous, ordered, tally, started, rows, sha256})
  summary.interrupted = interrupted
  const writeError = ordered.error
  // The output is closed (and synced) while the evidence closes; it is moved into place only
  // after, so an output never holds a row its evidence lacks.
  const outputClosed = closeOutput(ordered)
  let journalError: unknown
  try {
    await evidence.close()
  } catch (error) {
    journalError = error
  }
  const closed = await outputClosed
  const fatal = unexpected ?? journalError ?? writeError
  try {
    if (interrupted || fatal) {
      await target.abort()
      finish()
      await evidence.writeSummary(summary).catch(() => undefined)
      if (fatal) throw runStopped(fatal)
      return summary
    }
    await commitOutput(closed, target, output)
    finish()
    await evidence.writeSummary(summary).catch(() => undefined)
    return summary
  } finally {
    await evidence.release()
  }
}

function emptySummary(options: RunCallOptions, rows: number): CallSummary {
  const {config} = options
  return {
    command: config.kind,
    column: config.name,
    input: options.input,
    output: options.output ?? null,
    evidence_dir: options.evidenceDir ?? null,
    dry_run: Boolean(options.dryRun),
    interrupted: false,
    rows,
    finished: 0,
    resumed: 0,
    completed: 0,
    failed: 0,
    cancelled: 0,
    not_started: 0,
    failure_kinds: {},
    ...(config.response_protocol === 'gym-episode' ? {episodes: {completed: 0, failed: 0}} : {}),
    ...(config.kind === 'harness' ? {answers: {answered: 0, unanswered: 0}} : {}),
    duration_ms: 0,
    rows_per_second: 0,
  }
}

/** A dry run: every row's request built (nothing called), the invalid ones listed, the first one shown. */
async function previewRequests(options: RunCallOptions): Promise<Pick<CallSummary, 'invalid_requests' | 'invalid_request_count' | 'first_request'>> {
  const {config} = options
  const invalid: InvalidRequest[] = []
  let count = 0
  let first: CallSummary['first_request'] = null
  await forEachRow(options.input, (_index, line, raw) => {
    const planned = buildRowPlan(config, parseFast(raw) as Record<string, unknown>, line)
    if (planned.ok) {
      first ??= {url: config.endpoint + config.route, body: verbatim(parseJson(planned.plan.body))}
    } else {
      count++
      if (invalid.length < 20) invalid.push({line, row_id: planned.rowId, route: planned.route, reason: planned.reason})
    }
  })
  return {invalid_requests: invalid, invalid_request_count: count, first_request: first}
}

function requireOutputs(options: RunCallOptions): {output: string; evidenceDir: string} {
  if (!options.output || !options.evidenceDir) {
    throw new GymError('--output and --evidence-dir are required (unless --dry-run)', {
      code: 'E_USAGE',
      exit: ExitCode.usage,
      hint: 'e.g. --output executed.jsonl --evidence-dir runs/exec',
    })
  }
  if (path.resolve(options.output) === path.resolve(options.input)) {
    throw new GymError('--output must differ from the input rows file', {code: 'E_USAGE', exit: ExitCode.usage, hint: 'write the results to a new file'})
  }
  return {output: options.output, evidenceDir: options.evidenceDir}
}

/** The summary's counts, from rows finished now and rows an earlier run finished (read back from its journal). */
class Tally {
  constructor(
    private readonly summary: CallSummary,
    private readonly config: CallConfig,
  ) {}

  finished(status: unknown, kind: unknown, episodeStatus: unknown, answered: boolean | undefined): void {
    const {summary} = this
    summary.finished++
    if (status === 'completed') summary.completed++
    else summary.failed++
    if (typeof kind === 'string' && kind !== '') summary.failure_kinds[kind as FailureKind] = (summary.failure_kinds[kind as FailureKind] ?? 0) + 1
    if (summary.episodes && (episodeStatus === 'completed' || episodeStatus === 'failed')) summary.episodes[episodeStatus]++
    if (summary.answers) summary.answers[answered ? 'answered' : 'unanswered']++
  }

  recorded(columns: Record<string, unknown>): void {
    const {config} = this
    const envelope = (config.kind === 'harness' ? columns[config.evidence_column!] : columns[config.name]) as Partial<ResourceEnvelope> | undefined
    this.summary.resumed++
    this.finished(envelope?.status, envelope?.failure_kind, envelope?.episode_status ?? null, config.kind === 'harness' ? columns[config.name] !== null : undefined)
  }

  cancelled(): void {
    this.summary.cancelled++
  }

  notStarted(count = 1): void {
    this.summary.not_started += count
  }

  get counts(): Pick<CallSummary, 'finished' | 'completed' | 'failed' | 'resumed'> {
    const {finished, completed, failed, resumed} = this.summary
    return {finished, completed, failed, resumed}
  }
}

interface EveryRow {
  options: RunCallOptions
  tokens: ReadonlyMap<string, string>
  evidence: EvidenceDir
  previous: RecordedRows
  ordered: OrderedOutput
  tally: Tally
  started: number
  rows: number
  sha256: string
}

/** Pass 2: call every row not finished before, in a bounded window, until done, interrupted or stopped by a fatal error. */
async function callEveryRow(run: EveryRow): Promise<{interrupted: boolean; unexpected: unknown}> {
  const {options, evidence, ordered, tally, rows} = run
  const {config} = options
  // Internal cancellation: the caller's signal, or a fatal journal/output error.
  const cancel = new AbortController()
  const onExternal = () => cancel.abort('interrupted')
  options.signal?.addEventListener('abort', onExternal, {once: true})
  if (options.signal?.aborted) cancel.abort('interrupted')

  const limiter = new Limiter(config.max_parallel_requests)
  // one keep-alive pool per origin, never more sockets than row lifecycles that can run at once
  const ownTransport = options.transport ? undefined : await pooledHttpTransport({maxSocketsPerOrigin: config.max_parallel_requests})
  const ctx: RowCallContext = {
    config,
    transport: options.transport ?? ownTransport!,
    bearerTokens: run.tokens,
    limiter,
    cancel: cancel.signal,
    evidence,
    queueDeadline: config.queue_timeout === undefined ? undefined : Date.now() + config.queue_timeout * 1000,
  }
  const progress = () =>
    options.onProgress?.({total: rows, ...tally.counts, inFlight: limiter.running, elapsedMs: performance.now() - run.started})
  progress()

  const handle = (index: number, line: number, raw: string, outcome: RowOutcome) => {
    if (outcome.state === 'finished') {
      const columnsText = outcome.columnsText ?? stringifyJson(outcome.columns)
      evidence.recordFinished(index, line, outcome.attemptId, columnsText)
      ordered.put(index, outputLine(raw, columnsText))
      tally.finished(outcome.status, outcome.failureKind, outcome.episodeStatus, outcome.answered)
      if ((evidence.error || ordered.error) && !cancel.signal.aborted) cancel.abort('fatal')
      progress()
    } else if (outcome.state === 'cancelled') {
      tally.cancelled()
    } else {
      tally.notStarted()
    }
  }

  const pass = new CallPass(ctx, cancel, ordered, run.previous, options.window ?? runWindow(config.max_parallel_requests), handle)
  limiter.onRelease = pass.wakeUp
  const stopWaking = onAbort(cancel.signal, pass.wakeUp)
  const deadlineTimer = ctx.queueDeadline === undefined ? undefined : setTimeout(pass.wakeUp, Math.max(0, ctx.queueDeadline - Date.now()))
  let read: {complete: boolean; sha256?: string}
  try {
    read = await pass.run(options.input)
  } finally {
    stopWaking()
    limiter.onRelease = undefined
    if (deadlineTimer) clearTimeout(deadlineTimer)
    options.signal?.removeEventListener('abort', onExternal)
    ownTransport?.close()
  }
  let unexpected = pass.unexpected
  tally.notStarted(rows - tally.counts.resumed - pass.started)
  if (read.complete && (pass.index !== rows || read.sha256 !== run.sha256) && unexpected === undefined) unexpected = inputChanged(options.input)
  return {interrupted: cancel.signal.aborted && cancel.signal.reason === 'interrupted', unexpected}
}

function runStopped(fatal: unknown): GymError {
  if (fatal instanceof GymError) return fatal
  return new GymError(`call run stopped: ${messageOf(fatal)}`, {
    code: 'E_CALL_RUN_FAILED',
    exit: ExitCode.failure,
    hint: 'finished rows are recorded in the evidence journal; fix the problem and re-run with --resume',
    cause: fatal,
  })
}

/** Close the output, which syncs it; never rejects. */
async function closeOutput(ordered: OrderedOutput): Promise<{ok: true} | {ok: false; error: unknown}> {
  try {
    await ordered.close()
    return {ok: true}
  } catch (error) {
    return {ok: false, error}
  }
}

/** Move the closed output into place. */
async function commitOutput(closed: Awaited<ReturnType<typeof closeOutput>>, target: AtomicTarget, output: string): Promise<void> {
  try {
    if (!closed.ok) throw closed.error
    await target.commit()
  } catch (error) {
    await target.abort()
    throw new GymError(`cannot write output ${output} (${codeOf(error) ?? messageOf(error)})`, {
      code: 'E_CALL_OUTPUT_UNWRITABLE',
      exit: ExitCode.failure,
      hint: 'every finished row is in the evidence journal: fix the output location and re-run with --resume',
      location: {file: output},
    })
  }
}

/** Call fn for every non-blank (trimmed) line of a rows file already validated by scanRows. */
async function forEachRow(file: string, fn: (index: number, line: number, raw: string) => void): Promise<void> {
  const reader = await LineReader.open(file).catch((error) => {
    throw inputUnreadable(file, error)
  })
  let index = 0
  try {
    for (let lines = await reader.nextTexts(); lines; lines = await reader.nextTexts()) {
      const first = reader.firstLine
      for (let n = 0; n < lines.length; n++) {
        const raw = lines[n].trim()
        if (raw !== '') fn(index++, first + n, raw)
      }
    }
  } finally {
    await reader.close()
  }
}

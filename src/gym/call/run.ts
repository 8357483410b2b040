import {createHash} from 'node:crypto'
import {createWriteStream, promises as fsp, type WriteStream} from 'node:fs'
import path from 'node:path'

import {ExitCode, GymError} from '../../errors.js'
import {openAtomicTarget} from '../../runtime/fs.js'
import {readBearerTokens} from './config.js'
import {EvidenceDir, FLUSH_MS, type JournalHeader} from './evidence.js'
import {isPlainObject, parseLossless, stringifyLossless} from './json.js'
import {callRow, type RowCallContext, type RowInput, type RowOutcome} from './lifecycle.js'
import {Limiter} from './limiter.js'
import {buildRowPlan} from './request.js'
import {type HttpTransport, nodeHttpTransport} from './transport.js'
import type {CallConfig, FailureKind} from './types.js'

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
  duration_ms: number
  rows_per_second: number
}

/** A validated input row; it is parsed again when it starts so only its text stays in memory. */
interface InputRow {
  index: number
  line: number
  /** The row's JSON text, trimmed; output lines extend it so input bytes are kept as they are. */
  raw: string
  empty: boolean
}

function toRowInput(row: InputRow): RowInput {
  return {index: row.index, line: row.line, row: parseLossless(row.raw) as Record<string, unknown>}
}

/** Read JSONL rows losslessly; blank lines are skipped, anything else must be a JSON object. */
export async function readRows(file: string, config: CallConfig): Promise<{rows: InputRow[]; sha256: string}> {
  let text: string
  try {
    text = await fsp.readFile(file, 'utf8')
  } catch (error: any) {
    throw new GymError(`cannot read rows file ${file} (${error?.code ?? error?.message})`, {
      code: 'E_CALL_INPUT_UNREADABLE',
      exit: ExitCode.usage,
      hint: 'pass the path of a JSONL file with one JSON object per line',
      location: {file},
    })
  }
  const sha256 = createHash('sha256').update(text).digest('hex')
  const rows: InputRow[] = []
  const outputColumns = [config.name, ...(config.evidence_column ? [config.evidence_column] : [])]
  const lines = text.split('\n')
  for (let n = 0; n < lines.length; n++) {
    const raw = lines[n].trim()
    if (raw === '') continue
    let row: unknown
    try {
      row = parseLossless(raw)
    } catch (error: any) {
      throw new GymError(`not valid JSON (${error?.message ?? error})`, {
        code: 'E_CALL_INPUT_INVALID',
        exit: ExitCode.usage,
        hint: 'each line of the rows file must be one JSON object',
        location: {file, line: n + 1},
      })
    }
    if (!isPlainObject(row)) {
      throw new GymError(`a row must be a JSON object`, {
        code: 'E_CALL_INPUT_INVALID',
        exit: ExitCode.usage,
        hint: 'each line of the rows file must be one JSON object',
        location: {file, line: n + 1},
      })
    }
    const clash = outputColumns.find((c) => Object.prototype.hasOwnProperty.call(row, c))
    if (clash) {
      throw new GymError(`the row already has a field named ${clash}, the output column of this config`, {
        code: 'E_CALL_INPUT_INVALID',
        exit: ExitCode.usage,
        hint: 'choose another `name`/`evidence_column` in the config so no existing data is overwritten',
        location: {file, line: n + 1, field: clash},
      })
    }
    rows.push({index: rows.length, line: n + 1, raw, empty: Object.keys(row).length === 0})
  }
  return {rows, sha256}
}

/** Config fingerprint for resume; the tuning knobs may change between an interrupted run and its resume. */
export function configFingerprint(config: CallConfig): string {
  const {max_parallel_requests: _m, timeout: _t, queue_timeout: _q, ...rest} = config
  const session = rest.session ? {...rest.session, cleanup_timeout: undefined} : undefined
  return createHash('sha256')
    .update(stringifyLossless({...rest, session}))
    .digest('hex')
}

/** Output line: the input row's own text extended by the output columns. */
function outputLine(row: InputRow, columnsText: string): string {
  const inner = columnsText.slice(1, -1)
  return row.empty ? `{${inner}}\n` : `${row.raw.slice(0, -1)},${inner}}\n`
}

/** Writes output lines in input order although rows finish out of order. */
class OrderedOutput {
  private next = 0
  private readonly waiting = new Map<number, string>()
  private failure?: Error

  constructor(private readonly stream: WriteStream) {
    stream.on('error', (error) => {
      this.failure ??= error
    })
  }

  put(index: number, line: string): void {
    this.waiting.set(index, line)
    let chunk = ''
    while (this.waiting.has(this.next)) {
      chunk += this.waiting.get(this.next)
      this.waiting.delete(this.next)
      this.next++
    }
    if (chunk === '') return
    // batched like the journal
    if (this.buffered === '') setTimeout(() => this.flush(), FLUSH_MS)
    this.buffered += chunk
  }

  private buffered = ''
  private flush(): void {
    if (this.buffered === '') return
    this.stream.write(this.buffered)
    this.buffered = ''
  }

  get error(): Error | undefined {
    return this.failure
  }

  async close(): Promise<void> {
    this.flush()
    await new Promise<void>((resolve, reject) => {
      this.stream.end((error?: Error | null) => (error ? reject(error) : resolve()))
    })
    if (this.failure) throw this.failure
  }
}

/**
 * Call the configured service once per row and write the output JSONL (input
 * order, one envelope column per row; harness: answer + evidence columns).
 */
export async function runCall(options: RunCallOptions): Promise<CallSummary> {
  const started = performance.now()
  const {config} = options
  const bearerTokens = readBearerTokens(config, options.env ?? process.env)
  const {rows, sha256} = await readRows(options.input, config)
  const summary: CallSummary = {
    command: config.kind,
    column: config.name,
    input: options.input,
    output: options.output ?? null,
    evidence_dir: options.evidenceDir ?? null,
    dry_run: Boolean(options.dryRun),
    interrupted: false,
    rows: rows.length,
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
  const finish = (): CallSummary => {
    summary.duration_ms = Math.round(performance.now() - started)
    const called = summary.finished - summary.resumed
    summary.rows_per_second = summary.duration_ms > 0 ? Math.round((called / summary.duration_ms) * 1000 * 10) / 10 : 0
    return summary
  }

  if (options.dryRun) {
    const invalid: InvalidRequest[] = []
    let count = 0
    let first: CallSummary['first_request'] = null
    for (const row of rows) {
      const planned = buildRowPlan(config, toRowInput(row).row, row.line)
      if (planned.ok) {
        first ??= {url: config.endpoint + config.route, body: parseLossless(planned.plan.body)}
      } else {
        count++
        if (invalid.length < 20) invalid.push({line: row.line, row_id: planned.rowId, route: planned.route, reason: planned.reason})
      }
    }
    summary.invalid_requests = invalid
    summary.invalid_request_count = count
    summary.first_request = first
    return finish()
  }

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

  const header: JournalHeader = {
    journal: 'gymrecipe.call.journal/1',
    command: config.kind,
    column: config.name,
    config_sha256: configFingerprint(config),
    input_sha256: sha256,
    rows: rows.length,
    started_at: new Date().toISOString(),
  }
  const {evidence, previous} = await EvidenceDir.open(options.evidenceDir, header, Boolean(options.resume))
  const target = await openAtomicTarget(options.output)
  const output = new OrderedOutput(createWriteStream(target.tmpPath))

  // Internal cancellation: the caller's signal, or a fatal journal/output error.
  const cancel = new AbortController()
  const onExternal = () => cancel.abort('interrupted')
  options.signal?.addEventListener('abort', onExternal, {once: true})
  if (options.signal?.aborted) cancel.abort('interrupted')

  const limiter = new Limiter(config.max_parallel_requests)
  const ctx: RowCallContext = {
    config,
    transport: options.transport ?? nodeHttpTransport(),
    bearerTokens,
    limiter,
    cancel: cancel.signal,
    evidence,
    queueDeadline: config.queue_timeout === undefined ? undefined : Date.now() + config.queue_timeout * 1000,
  }

  const tally = (columnsText: string | undefined, outcome?: RowOutcome) => {
    summary.finished++
    let status: string | null | undefined = outcome?.status
    let kind: FailureKind | null | undefined = outcome?.failureKind
    let episodeStatus = outcome?.episodeStatus
    let answered = outcome?.answered
    if (!outcome && columnsText !== undefined) {
      // resumed row: read its recorded envelope
      const columns = JSON.parse(columnsText) as Record<string, any>
      const envelope = config.kind === 'harness' ? columns[config.evidence_column!] : columns[config.name]
      status = envelope?.status
      kind = envelope?.failure_kind
      episodeStatus = envelope?.episode_status ?? null
      answered = config.kind === 'harness' ? columns[config.name] !== null : undefined
    }
    if (status === 'completed') summary.completed++
    else summary.failed++
    if (kind) summary.failure_kinds[kind] = (summary.failure_kinds[kind] ?? 0) + 1
    if (summary.episodes && episodeStatus) summary.episodes[episodeStatus]++
    if (summary.answers) summary.answers[answered ? 'answered' : 'unanswered']++
  }
  const progress = () =>
    options.onProgress?.({
      total: rows.length,
      finished: summary.finished,
      completed: summary.completed,
      failed: summary.failed,
      resumed: summary.resumed,
      inFlight: limiter.running,
      elapsedMs: performance.now() - started,
    })

  const todo: InputRow[] = []
  for (const row of rows) {
    const done = previous.get(row.index)
    if (done) {
      summary.resumed++
      tally(done.columnsText)
      output.put(row.index, outputLine(row, done.columnsText))
    } else {
      todo.push(row)
    }
  }
  progress()

  // Rows start in input order. The limiter inside callRow bounds the remote
  // lifecycles (initialize, execute, cleanup) to max_parallel_requests; a row
  // leaves its slot after cleanup and then writes its evidence, so evidence
  // writes of finished rows overlap the next rows' calls. The window bounds
  // how many rows are in memory at once.
  const handle = (row: InputRow, outcome: RowOutcome) => {
    if (outcome.state === 'finished') {
      const columnsText = stringifyLossless(outcome.columns)
      evidence.recordFinished(row.index, row.line, outcome.attemptId, columnsText)
      output.put(row.index, outputLine(row, columnsText))
      tally(columnsText, outcome)
      if ((evidence.error || output.error) && !cancel.signal.aborted) cancel.abort('fatal')
      progress()
    } else if (outcome.state === 'cancelled') {
      summary.cancelled++
    } else {
      summary.not_started++
    }
  }
  const window = Math.max(config.max_parallel_requests * 4, 256)
  const running = new Set<Promise<void>>()
  let unexpected: unknown
  let cursor = 0
  let wake: (() => void) | undefined
  try {
    while (cursor < todo.length && !cancel.signal.aborted && unexpected === undefined) {
      if (running.size >= window) {
        await new Promise<void>((resolve) => {
          wake = resolve
        })
        continue
      }
      const row = todo[cursor++]
      const task: Promise<void> = callRow(ctx, toRowInput(row))
        .then((outcome) => handle(row, outcome))
        .catch((error) => {
          unexpected ??= error
          cancel.abort('fatal')
        })
        .finally(() => {
          running.delete(task)
          const w = wake
          wake = undefined
          w?.()
        })
      running.add(task)
    }
    await Promise.all(running)
  } finally {
    options.signal?.removeEventListener('abort', onExternal)
  }
  summary.not_started += todo.length - cursor

  const interrupted = cancel.signal.aborted && cancel.signal.reason === 'interrupted'
  summary.interrupted = interrupted
  let journalError: unknown
  try {
    await evidence.close()
  } catch (error) {
    journalError = error
  }
  const fatal = unexpected ?? journalError ?? output.error
  if (interrupted || fatal) {
    await output.close().catch(() => undefined)
    await target.abort()
    finish()
    await evidence.writeSummary(summary).catch(() => undefined)
    if (fatal) {
      if (fatal instanceof GymError) throw fatal
      throw new GymError(`call run stopped: ${(fatal as Error)?.message ?? fatal}`, {
        code: 'E_CALL_RUN_FAILED',
        exit: ExitCode.failure,
        hint: 'finished rows are recorded in the evidence journal; fix the problem and re-run with --resume',
        cause: fatal,
      })
    }
    return summary
  }
  try {
    await output.close()
    const handle = await fsp.open(target.tmpPath, 'r+')
    await handle.sync()
    await handle.close()
    await target.commit()
  } catch (error: any) {
    await target.abort()
    throw new GymError(`cannot write output ${options.output} (${error?.code ?? error?.message})`, {
      code: 'E_CALL_OUTPUT_UNWRITABLE',
      exit: ExitCode.failure,
      hint: 'every finished row is in the evidence journal: fix the output location and re-run with --resume',
      location: {file: options.output},
    })
  }
  finish()
  await evidence.writeSummary(summary).catch(() => undefined)
  return summary
}

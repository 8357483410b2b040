import {Args, Flags} from '@oclif/core'

import {ExitCode} from '../errors.js'
import {loadCallConfig} from '../gym/call/config.js'
import {stringifyJson} from '../json/index.js'
import {type CallProgress, type CallSummary, runCall} from '../gym/call/run.js'
import type {CallKind} from '../gym/call/types.js'
import {onInterrupt} from '../runtime/interrupt.js'
import {BaseCommand, type Failure} from './base-command.js'
import {progressLine, type ProgressLine} from './progress.js'

/** What the shared command runner needs from an oclif command (kept small so it stays testable). */
export interface CallCommandHost {
  say(message: string): void
  warnLine(message: string): void
  jsonEnabled(): boolean
  withExitCode<R>(result: R, code: number, failure?: Failure): R
}

export const callArgs = {
  rows: Args.string({description: 'input rows, one JSON object per line (JSONL)', required: true}),
}

export const callFlags = {
  config: Flags.string({char: 'c', description: 'call config (YAML), validated before anything runs', required: true}),
  output: Flags.string({char: 'o', description: 'output JSONL: the input rows in input order plus the result column(s); written to a temporary file and renamed'}),
  'evidence-dir': Flags.string({char: 'e', description: 'where attempt artifacts, the progress journal and summary.json go'}),
  resume: Flags.boolean({description: 'continue an interrupted run: rows the journal in --evidence-dir records as finished are not called again', default: false}),
  'dry-run': Flags.boolean({description: 'validate the config and rows and build every request; call nothing, write nothing', default: false}),
}

const EXIT_STATUS = `EXIT STATUS
  0    every row completed (call and cleanup succeeded)
  1    output written but some row failed, or a journal/output write error,
       or the rows file changed during the run
  2    bad config, rows file or flags, or a bearer_token_env not set
  3    the evidence folder is in use by another run (one run per folder)
  130  interrupted (Ctrl+C / SIGTERM); re-run with --resume`

export function callDescription(kind: CallKind): string {
  const what =
    kind === 'resource'
      ? 'Calls a resource route (e.g. /execute, or a whole-episode /run with `response_protocol: gym-episode`) once per row and adds one envelope column named by the config `name`: status, row_id, attempt_id, artifact, failure_kind, failure_stage, failure_route, failure_reason, provenance_json, cleanup_errors_json, response_json (plus episode_status, episode_failure_*, episode_terminal, reward, mask_sample for gym-episode). HTTP success means the call completed; SQL errors, rewards and semantic rejections stay inside response_json.'
      : 'Calls an agent harness (default route /v1/responses) once per row. The `name` column gets the final assistant text only: null unless the last output item is a completed assistant message with text and no tool call is pending. The `evidence_column` gets the envelope (status, failure fields, provenance_json, cleanup_errors_json, response_json projection, tool_trace_json). There is no caller-side tool loop.'
  return [
    what,
    'Each row owns its client state (cookie jar, session headers, which bearer token goes to which endpoint), used across session.initialize, the call and session.cleanup; connections come from one keep-alive pool per endpoint, shared by the rows and never larger than max_parallel_requests, and carry nothing of one row to another. Requests are never retried, proxy environment variables are ignored and redirects are not followed. max_parallel_requests bounds whole row lifecycles including cleanup. Every attempt writes its native request and response to <evidence-dir>/attempts/; initialize response bodies, tokens and cookies are never written. The rows file is streamed (validated in a first pass, called in a second), so memory does not grow with its length.',
    'Ctrl+C or SIGTERM stops admitting rows, cancels the rows in flight, runs their cleanup, writes their evidence and exits 130 (a second Ctrl+C exits at once). --resume then calls only the rows that did not finish and writes the output in input order; remote deduplication still needs the service\'s own idempotency. An evidence folder belongs to one run at a time: a second run on it is refused at once and told which process holds it; a run that crashed frees it by itself.',
    EXIT_STATUS,
  ].join('\n\n')
}

export function callExamples(kind: CallKind): string[] {
  return kind === 'resource'
    ? [
        '<%= config.bin %> <%= command.id %> rows.jsonl --config execution.yaml --output executed.jsonl --evidence-dir runs/exec',
        '<%= config.bin %> <%= command.id %> rows.jsonl --config execution.yaml --dry-run',
        '<%= config.bin %> <%= command.id %> rows.jsonl --config execution.yaml --output executed.jsonl --evidence-dir runs/exec --resume',
        '<%= config.bin %> <%= command.id %> rows.jsonl --config episode.yaml --output episodes.jsonl --evidence-dir runs/episode --json',
      ]
    : [
        '<%= config.bin %> <%= command.id %> rows.jsonl --config answer.yaml --output answered.jsonl --evidence-dir runs/answer',
        '<%= config.bin %> <%= command.id %> rows.jsonl --config answer.yaml --dry-run --json',
        '<%= config.bin %> <%= command.id %> rows.jsonl --config answer.yaml --output answered.jsonl --evidence-dir runs/answer --resume',
      ]
}

interface CallFlagValues {
  config: string
  output?: string
  'evidence-dir'?: string
  resume: boolean
  'dry-run': boolean
}

/** The body of `call resource` / `call harness`: load, run with signal handling and progress, report. */
export async function runCallCommand(host: CallCommandHost, kind: CallKind, rowsFile: string, flags: CallFlagValues): Promise<CallSummary> {
  const config = await loadCallConfig(flags.config, kind)
  const stopping = (signal: NodeJS.Signals) => host.warnLine(`\n${signal}: stopping; cancelling in-flight rows and running their cleanup (press Ctrl+C again to exit at once, skipping cleanup)`)
  const progress = progressPrinter(host, `call ${kind} ${config.name}`)
  let summary: CallSummary
  try {
    summary = await onInterrupt({notice: stopping}, (signal) => runCall({
      config,
      input: rowsFile,
      output: flags.output,
      evidenceDir: flags['evidence-dir'],
      resume: flags.resume,
      dryRun: flags['dry-run'],
      signal,
      onProgress: progress.update,
    }))
  } finally {
    progress.stop()
  }
  report(host, kind, summary)
  if (summary.interrupted) return host.withExitCode(summary, ExitCode.interrupted, {code: 'E_INTERRUPTED', message: 'interrupted: in-flight rows were cancelled and cleaned up', hint: 'Run again with --resume to call only the rows that did not finish.'})
  // The dry run's status is the real run's: it would stop on a missing token (exit 2).
  if (summary.missing_tokens?.length) return host.withExitCode(summary, ExitCode.usage, {code: 'E_TOKEN_MISSING', message: `bearer token variable(s) not set: ${summary.missing_tokens.join(', ')}`, hint: 'Export them (their values are never printed).'})
  return host.withExitCode(summary, summary.failed > 0 ? ExitCode.failure : ExitCode.ok, {code: 'E_ROWS_FAILED', message: `${summary.failed} row(s) failed`, hint: 'The evidence folder holds each failed row\'s requests and answers.'})
}

function progressPrinter(host: CallCommandHost, label: string): ProgressLine<CallProgress> {
  return progressLine<CallProgress>(host, (p) => {
    const called = p.finished - p.resumed
    const rate = p.elapsedMs > 0 ? (called / p.elapsedMs) * 1000 : 0
    return `${label}: ${p.finished}/${p.total} rows finished (${p.completed} completed, ${p.failed} failed${p.resumed ? `, ${p.resumed} resumed` : ''}), ${p.inFlight} in flight, ${rate.toFixed(1)} rows/s`
  })
}

function report(host: CallCommandHost, kind: CallKind, s: CallSummary): void {
  const kinds = Object.entries(s.failure_kinds)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ')
  if (s.dry_run) {
    host.say(`dry run: config valid, ${s.rows} rows, ${s.rows - (s.invalid_request_count ?? 0)} requests built, ${s.invalid_request_count ?? 0} invalid; nothing was called or written`)
    for (const bad of s.invalid_requests ?? []) host.say(`  line ${bad.line}: ${bad.reason}`)
    if (s.first_request) {
      const body = stringifyJson(s.first_request.body)
      host.say(`  first request: POST ${s.first_request.url} ${body.length > 400 ? `${body.slice(0, 400)}…` : body}`)
    }
    for (const missing of s.missing_tokens ?? []) {
      host.warnLine(`the real run would stop: environment variable ${missing.name} (${missing.pointer}) is not set or empty; export ${missing.name}=<token> (sent only to ${missing.endpoint})`)
    }
    return
  }
  if (s.interrupted) {
    host.warnLine(
      `interrupted: ${s.finished} of ${s.rows} rows finished${s.resumed ? ` (${s.resumed} from the earlier run)` : ''}; ${s.cancelled} in-flight row${s.cancelled === 1 ? ' was' : 's were'} cancelled after cleanup, ${s.not_started} not started`,
    )
    host.warnLine(`re-run with --resume to call only the unfinished rows (evidence: ${s.evidence_dir})`)
    return
  }
  host.say(`call ${kind} ${s.column}: ${s.rows} rows, ${s.completed} completed, ${s.failed} failed${kinds ? ` (${kinds})` : ''}${s.resumed ? `, ${s.resumed} taken from the journal` : ''}`)
  if (s.episodes) host.say(`  episodes: ${s.episodes.completed} completed, ${s.episodes.failed} failed`)
  if (s.answers) host.say(`  answers: ${s.answers.answered} answered, ${s.answers.unanswered} without an answer`)
  host.say(`  output    ${s.output}`)
  host.say(`  evidence  ${s.evidence_dir}`)
  host.say(`  ${(s.duration_ms / 1000).toFixed(1)} s, ${s.rows_per_second} rows/s`)
}

/** `call resource` and `call harness`: the same arguments, flags and runner; each names its kind and help text. */
export abstract class CallCommand extends BaseCommand<typeof CallCommand> {
  static override args = callArgs
  static override flags = callFlags

  protected abstract readonly kind: CallKind

  public async run(): Promise<CallSummary> {
    this.dataOutput(this.flags.output)
    return runCallCommand(
      {
        say: (m) => this.say(m),
        warnLine: (m) => this.warnLine(m),
        jsonEnabled: () => this.jsonEnabled(),
        withExitCode: (r, c, f) => this.withExitCode(r, c, f),
      },
      this.kind,
      this.args.rows,
      this.flags,
    )
  }
}

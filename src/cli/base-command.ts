import {stringify} from 'lossless-json'
import {Command, Interfaces} from '@oclif/core'
import {finished} from 'node:stream/promises'
import type {Writable} from 'node:stream'
import {format} from 'node:util'

import {codeOf, ExitCode, fromSystemError, GymError, isGymError, isSystemError, messageOf, numberField, usageError} from '../errors.js'
import type {ReadProgress} from '../json/index.js'
import {envelope, type EnvelopeError} from './envelope.js'
import {type ProgressHost, type ProgressLine, readProgress, type ScriptOutputSink, scriptOutputSink, type StepLine, stepLine} from './progress.js'
import {removeOpenTemporariesSync} from '../runtime/fs.js'
import {type InterruptOptions, onInterrupt, removeOnInterrupt} from '../runtime/interrupt.js'
import {Redactor, redactingStream} from '../redact.js'
import type {LadderPrinter} from '../ladder/index.js'
import {terminalSafe} from '../terminal-text.js'
import {snakeCaseKeys} from '../json-document.js'

export type BaseFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof BaseCommand)['baseFlags'] & T['flags']>
export type BaseArgs<T extends typeof Command> = Interfaces.InferredArgs<T['args']>

/** The EXIT STATUS help line of a command with removesPartialOutputOnInterrupt. */
/** `1 record`, `2 records`. */
export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`
}

/** --output is required unless --dry-run, which writes nothing. */
export function outputUnlessDryRun(output: string | undefined, dryRun: boolean): string {
  if (output !== undefined) return output
  if (dryRun) return ''
  throw usageError('--output is required (unless --dry-run)', 'Pass -o <file>.jsonl, or - for stdout.')
}

export const PARTIAL_OUTPUT_INTERRUPT_STATUS = '130  interrupted (Ctrl+C / SIGTERM); the partial output is removed and the previous file, if any, kept'
/** Help line for commands that write an output file. */
export const OUTPUT_WRITE_STATUS = '1  the output could not be written (no space, read-only, permission); the previous file, if any, kept'

/**
 * Shared behaviour of every gymrecipe command: --json, error mapping to stable
 * codes and exit statuses, and output helpers that stay quiet under --json.
 */
export abstract class BaseCommand<T extends typeof Command> extends Command {
  static override enableJsonFlag = true

  static override baseFlags = {}

  /**
   * Commands that stream into a temporary sibling and own no signal handling of
   * their own set this: Ctrl+C / SIGTERM then removes the partial output and
   * exits 130, so an interrupted run leaves nothing behind and nothing half-written.
   */
  static removesPartialOutputOnInterrupt = false

  protected flags!: BaseFlags<T>
  protected args!: BaseArgs<T>
  /** Every line, JSON document and error this command prints passes through it. */
  protected readonly redactor = new Redactor(process.env)

  public override async init(): Promise<void> {
    await super.init()
    const {args, flags} = await this.parse({
      args: this.ctor.args,
      baseFlags: (super.ctor as typeof BaseCommand).baseFlags,
      enableJsonFlag: this.ctor.enableJsonFlag,
      flags: this.ctor.flags,
      strict: this.ctor.strict,
    })
    this.flags = flags as BaseFlags<T>
    this.args = args as BaseArgs<T>
    if ((this.ctor as typeof BaseCommand).removesPartialOutputOnInterrupt) {
      removeOnInterrupt(() => (removeOpenTemporariesSync().length > 0 ? 'the partial output was removed and nothing was written' : 'nothing was written'))
    }
  }

  public override log(message = '', ...args: unknown[]): void {
    super.log(terminalSafe(this.redactor.text(format(message, ...args))))
  }

  public override logToStderr(message = '', ...args: unknown[]): void {
    super.logToStderr(terminalSafe(this.redactor.text(format(message, ...args))))
  }

  /** Numbers read from data (lossless) are printed as written, never as {"value", "isLosslessNumber"} objects. */
  protected override logJson(json: unknown): void {
    process.stdout.write(`${this.redactor.text(stringify(this.redactor.value(json), undefined, 2) ?? 'null')}\n`)
  }

  /** What went wrong, when a command returns its result with a non-zero exit status. */
  private failure: Failure | undefined

  /**
   * Under --json every command prints one envelope (README: "--json"); the result is its own
   * document. A non-zero exit always carries an `error` too: the command's own words, or, when it
   * gave none, words read from the result.
   */
  protected override toSuccessJson(result: unknown): unknown {
    const exitCode = typeof process.exitCode === 'number' ? process.exitCode : ExitCode.ok
    const error = exitCode === ExitCode.ok ? null : failureBody(this.failure ?? failureFromResult(result, exitCode))
    return this.redactor.value(envelope(exitCode, snakeCaseKeys(result ?? null), this.warnings, error))
  }

  protected override toErrorJson(error: unknown): unknown {
    const gym = isGymError(error) ? error : undefined
    const exitCode = exitOf(error)
    const body: EnvelopeError = gym
      ? {code: gym.code, message: gym.message, hint: gym.hint ?? null, location: locationOf(gym.location), details: snakeCaseKeys(gym.details ?? null)}
      : {code: codeOf(error) ?? (exitCode === ExitCode.usage ? 'E_USAGE' : 'E_FAILED'), message: messageOf(error), hint: null, location: null, details: null}
    return this.redactor.value(envelope(exitCode, null, this.warnings, body))
  }

  /** Warning lines of this run: printed to stderr for people, gathered into the envelope under --json. */
  private readonly warnings: string[] = []

  /** Output relayed from processes and containers, redacted line by line (a secret cut by a chunk boundary is still found). */
  private relays?: {stdout: Writable; stderr: Writable}

  /** A stream for output relayed as it arrives (a script's, a container's logs), redacted. */
  protected relayStream(stream: 'stdout' | 'stderr'): Writable {
    this.relays ??= {stdout: redactingStream(this.redactor, process.stdout), stderr: redactingStream(this.redactor, process.stderr)}
    return this.relays[stream]
  }

  /** Relay a piece of a process's or container's output, redacted. */
  protected relay(stream: 'stdout' | 'stderr', text: string): void {
    this.relayStream(stream).write(text)
  }

  /** What relayed output still holds (a last line without its newline) is written before the command ends. */
  public override async finally(error: Error | undefined): Promise<unknown> {
    if (this.relays) {
      const {stdout, stderr} = this.relays
      this.relays = undefined
      stdout.end()
      stderr.end()
      await Promise.all([finished(stdout), finished(stderr)]).catch(() => undefined)
    }
    return super.finally(error)
  }

  /**
   * A line of a long step's own log (what it is doing, a container's last lines): for people on
   * stdout; under --json on stderr beside the document, as the script's output is.
   */
  protected logLine(message: string): void {
    // oclif's own logToStderr is silent under --json: the line is relayed to stderr instead.
    if (this.jsonEnabled()) this.relay('stderr', `${message}\n`)
    else this.say(message)
  }

  /** What Ctrl+C / SIGTERM prints when it arrives: `<signal>: <what happens now>`, on stderr. */
  protected stoppingNotice(what: string): (signal: NodeJS.Signals) => void {
    return (signal) => this.relay('stderr', `\n${signal}: ${what}\n`)
  }

  /** Lines for people go to stderr while stdout carries data (`-o -`). */
  private stdoutCarriesData = false

  /**
   * Declare a data output path: `-o -` (or /dev/stdout) makes stdout the data stream, so
   * messages for people move to stderr; --json cannot share stdout with it.
   */
  protected dataOutput(output: string | undefined): void {
    if (output !== '-' && output !== '/dev/stdout') return
    if (this.jsonEnabled()) throw usageError(`--json and --output ${output} would both write to stdout`, 'Write the data to a file, or drop --json (the summary then goes to stderr).')
    this.stdoutCarriesData = true
  }

  /** Print a line for people; silent under --json. */
  protected say(message = ''): void {
    if (this.jsonEnabled()) return
    if (this.stdoutCarriesData) this.logToStderr(message)
    else this.log(message)
  }

  private progressHost(): ProgressHost {
    return {jsonEnabled: () => this.jsonEnabled(), warnLine: (m) => this.warnLine(m)}
  }

  /**
   * Run work that winds down itself on Ctrl+C / SIGTERM: the first aborts its signal (after
   * `notice`), a second exits 130 at once.
   */
  protected interruptible<R>(options: InterruptOptions, work: (signal: AbortSignal) => Promise<R>): Promise<R> {
    return onInterrupt(options, work)
  }

  /** A spinner beside the step under way, on a terminal (see ./progress.ts). */
  protected stepLine(): StepLine {
    return stepLine(this.progressHost())
  }

  /** Progress of reading a JSONL file, on stderr (see ./progress.ts). */
  protected readProgress(label: string): ProgressLine<ReadProgress> {
    return readProgress(this.progressHost(), label)
  }

  /**
   * A script's output collapsed to a progress line for people (all of it with verbose); under
   * --json it is streamed to stderr whole, as a log beside the document on stdout.
   */
  protected scriptOutput(label: string, verbose: boolean): ScriptOutputSink {
    const json = this.jsonEnabled()
    return scriptOutputSink(this.progressHost(), label, verbose || json, (which, text) => this.relay(which === 'stderr' || json ? 'stderr' : 'stdout', text))
  }

  /** Where a climb of the ladder prints: this command's lines and warnings, live only on a terminal. */
  protected ladderPrinter(): LadderPrinter {
    return {live: !this.jsonEnabled() && Boolean(process.stdout.isTTY), line: (text) => this.say(text), warn: (text) => this.warnLine(text)}
  }

  /** Print a line to stderr for people; silent under --json. */
  protected warnLine(message: string): void {
    if (this.jsonEnabled()) this.warnings.push(message.trim())
    else this.logToStderr(message)
  }

  /**
   * Return a result (printed as JSON under --json) while still exiting with a
   * non-zero status, e.g. a report whose checks failed.
   */
  protected withExitCode<R>(result: R, exitCode: number, failure?: Failure): R {
    if (exitCode !== 0) {
      process.exitCode = exitCode
      this.failure = failure
    }
    return result
  }

  protected override async catch(error: Error & {exitCode?: number}): Promise<void> {
    if (isGymError(error)) return this.failWith(error)
    if (isSystemError(error)) return this.failWith(fromSystemError(error))
    error.message = this.redactor.text(error.message)
    if (!this.jsonEnabled()) error.message = terminalSafe(error.message)
    if (this.jsonEnabled()) {
      this.logJson(this.toErrorJson(error))
      process.exitCode = exitOf(error)
      return
    }
    return super.catch(error)
  }

  private failWith(error: GymError): void {
    const hint = error.hint === undefined ? undefined : terminalSafe(this.redactor.text(error.hint))
    const suggestions = hint ? [hint] : undefined
    if (this.jsonEnabled()) {
      this.logJson(this.toErrorJson(error))
      process.exitCode = error.exit
      return
    }
    this.error(terminalSafe(this.redactor.text(error.located)), {code: error.code, exit: error.exit, suggestions})
  }
}

/** Why a command that returned a result failed: a stable code, one line, and what to do. */
export interface Failure {
  code: string
  message: string
  hint?: string
}

const CODE_OF_EXIT: Record<number, string> = {1: 'E_FAILED', 2: 'E_USAGE', 3: 'E_PRECONDITION', 4: 'E_NOT_PROVEN', 130: 'E_INTERRUPTED'}

/** A failure read from a result that did not say one: its own message, outcome or status. */
function failureFromResult(result: unknown, exitCode: number): Failure {
  const fields = result && typeof result === 'object' ? (result as Record<string, unknown>) : {}
  const words = [fields.message, fields.outcome, fields.status].find((v): v is string => typeof v === 'string' && v.length > 0)
  return {code: CODE_OF_EXIT[exitCode] ?? 'E_FAILED', message: words ?? `exited ${exitCode}`}
}

function failureBody(failure: Failure): EnvelopeError {
  return {code: failure.code, message: failure.message, hint: failure.hint ?? null, location: null, details: null}
}

/** Where an error is, with only the parts that are known; null when nothing is. */
function locationOf(location: EnvelopeError['location'] | undefined): EnvelopeError['location'] {
  const known = Object.fromEntries(Object.entries(location ?? {}).filter(([, value]) => value !== undefined && value !== null))
  return Object.keys(known).length > 0 ? known : null
}

/** The exit status an error ends the command with: a GymError's own, oclif's for its parse errors, else 1. */
function exitOf(error: unknown): number {
  if (isGymError(error)) return error.exit
  return numberField((error as {oclif?: unknown} | undefined)?.oclif, 'exit') ?? ExitCode.failure
}

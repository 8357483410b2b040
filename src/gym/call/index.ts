/**
 * Evidence-keeping calls to Gym services, as a library:
 *
 *   const config = await loadCallConfig('execution.yaml', 'resource')
 *   const summary = await runCall({config, input: 'rows.jsonl', output: 'executed.jsonl', evidenceDir: 'runs/exec'})
 *
 * `callRow` runs one row's lifecycle against any HttpTransport.
 */
export {CALL_DEFAULTS, callConfigSchema, configuredEndpoints, loadCallConfig, parseCallConfig, readBearerTokens} from './config.js'
export type {ConfigProblem} from './config.js'
export {EMPTY_EPISODE, episodeOutcome} from './episode.js'
export type {EpisodeOutcome} from './episode.js'
export {ATTEMPTS_DIR, EvidenceDir, JOURNAL_FILE, SUMMARY_FILE} from './evidence.js'
export type {RecordedRows} from './evidence.js'
export {harnessOutcome} from './harness.js'
export type {HarnessOutcome} from './harness.js'
export {admit, callRow, CANCEL_REASON, prepareRow, runPreparedRow} from './lifecycle/index.js'
export type {AttemptWriter, PreparedRow, RowCallContext, RowInput, RowOutcome} from './lifecycle/index.js'
export {Limiter} from './limiter.js'
export {isDotPath, PathError, projectFields, resolvePath} from './paths.js'
export {buildRowPlan, rowIdOf} from './request.js'
export type {RowPlan, RowPlanResult} from './request.js'
export {runWindow} from './pass.js'
export {configFingerprint, readRows, runCall} from './run.js'
export type {RunWindow} from './pass.js'
export type {CallProgress, CallSummary, InvalidRequest, RunCallOptions} from './run.js'
export {scanRows} from './input.js'
export {RowSession} from './session.js'
export {AbortedError, Cancel, pooledHttpTransport, TransportError} from '../../runtime/call-transport.js'
export type {HttpRequest, HttpResponse, HttpTransport, PooledHttpTransportOptions, RowHttpClient} from '../../runtime/call-transport.js'
export * from './types.js'

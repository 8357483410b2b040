/**
 * The Gym data workflow as a library: task bundles, export, rollout ingestion and
 * evidence-keeping calls to Gym services. `import {runCall, exportTasks} from 'gymrecipe/gym'`.
 */
export * from './call/index.js'
export {parseJson, stringifyJson} from '../json/index.js'
export type {JsonObject, JsonValue} from '../json/index.js'
export {ingestRollouts} from './rollouts/ingest.js'
export type {IngestOptions, IngestSummary} from './rollouts/ingest.js'
export {buildScenarios, scenarioFromRow} from './tasks/build.js'
export type {BuildSummary, ScenarioBundle} from './tasks/build.js'
export {exportTasks} from './tasks/export.js'
export type {ExportSummary} from './tasks/export.js'
export {canonicalJson, defaultScenarioId, taskIndexOf} from './tasks/identity.js'

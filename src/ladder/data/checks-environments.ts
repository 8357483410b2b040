/**
 * A recipe that trains several environments routes each row by its own `environment` and
 * `config` (Relax's client reads them from the row's metadata, which the converter fills from the
 * row's top-level keys). Every row must name a registered pair and carry the fields of its own
 * environment's grader; an environment left with no rows is a mix that trains it not at all.
 */
import {isJsonObject, parseJson} from '../../json/index.js'
import {readJsonlBatches} from '../../json/jsonl-files.js'
import {environmentsOf} from '../../contract/types.js'
import {type Check, type CheckOutcome, passOrProblems} from '../types.js'
import {valueAtPath} from './convert.js'
import {dataScan, sourceUnusable} from './scan.js'

const LISTED = 5

export const environmentRows: Check = {
  id: 'data.environments',
  title: 'every row names a registered environment and carries its grader\'s fields',
  async run(ctx) {
    const contract = ctx.target.contract
    const environments = contract ? environmentsOf(contract) : []
    if (environments.length < 2) {
      const only = environments[0]
      return {status: 'pass', message: only ? `one environment (${only.environment}, Gateway config ${only.gateway_config}): rows need no routing` : 'no recipe.yaml: rows are not routed by environment'}
    }
    const scan = await dataScan(ctx)
    if (!scan.stats || !scan.plan.file) return sourceUnusable(scan)
    const file = scan.plan.file
    const byPair = new Map(environments.map((e) => [`${e.environment}\u0000${e.gateway_config}`, {env: e, rows: 0, missing: new Map<string, number[]>()}]))
    const unrouted: Array<{line: number; why: string}> = []
    let unroutedCount = 0
    for await (const batch of readJsonlBatches(file, 'NEMO_GYM_SOURCE_DATA')) {
      for (const {line, text} of batch) {
        let row: unknown
        try {
          row = parseJson(text)
        } catch {
          continue // data.rows reports it
        }
        if (!isJsonObject(row)) continue
        const environment = row.environment
        const config = row.config
        const entry = typeof environment === 'string' && typeof config === 'string' ? byPair.get(`${environment}\u0000${config}`) : undefined
        if (!entry) {
          unroutedCount++
          if (unrouted.length < LISTED) unrouted.push({line, why: typeof environment === 'string' && typeof config === 'string' ? `environment ${environment} / config ${config} is not registered` : 'no string environment and config'})
          continue
        }
        entry.rows++
        for (const field of entry.env.verifier_fields) {
          if (valueAtPath(row, field.split('.')) === undefined) {
            const lines = entry.missing.get(field) ?? []
            lines.push(line)
            entry.missing.set(field, lines)
          }
        }
      }
    }
    const counts = Object.fromEntries([...byPair.values()].map((e) => [e.env.environment, e.rows]))
    const problems: CheckOutcome[] = []
    if (unroutedCount > 0) {
      problems.push({status: 'fail', message: `${unroutedCount} row(s) name no registered environment/config pair (registered: ${environments.map((e) => `${e.environment}/${e.gateway_config}`).join(', ')})`, file, line: unrouted[0].line, hint: 'Stamp each row with the top-level environment and config of the Gateway registration that grades it.'})
      for (const u of unrouted) problems.push({status: 'fail', message: `line ${u.line}: ${u.why}`, file, line: u.line})
    }
    for (const {env, rows, missing} of byPair.values()) {
      if (rows === 0) problems.push({status: 'fail', message: `environment ${env.environment} has no rows: the mix would not train it at all`, file, hint: 'Add its rows, or drop the environment from the recipe.'})
      for (const [field, lines] of missing) {
        problems.push({status: 'fail', message: `${lines.length} ${env.environment} row(s) lack ${field}, which its grader reads (first at line ${lines[0]})`, file, line: lines[0], hint: `Drop ${env.environment} rows its resources server cannot grade before publishing.`})
      }
    }
    const summary = Object.entries(counts).map(([name, rows]) => `${name} ${rows}`).join(', ')
    return passOrProblems(this.id, this.title, problems, {status: 'pass', message: `rows per environment: ${summary}; each carries its own grader's fields`, evidence: {rows_per_environment: counts}})
  },
}

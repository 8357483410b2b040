import {Args, Flags} from '@oclif/core'

import {BaseCommand, outputUnlessDryRun, plural, OUTPUT_WRITE_STATUS, PARTIAL_OUTPUT_INTERRUPT_STATUS} from '../../cli/base-command.js'
import {type BuildSummary, buildScenarios} from '../../gym/tasks/build.js'
import {loadTaskSpec} from '../../gym/tasks/spec.js'

export default class TasksBuild extends BaseCommand<typeof TasksBuild> {
  static override removesPartialOutputOnInterrupt = true
  static override summary = 'Turn generated rows (any JSONL) into Gym scenario bundles'
  static override description = `Applies a task spec (the Data Designer Gym processor config, as YAML or JSON) to every row and writes one scenario bundle {"schema_version":"1","scenario_id":...,"task":...,"provenance":...} per included row. Nothing is written unless every row is valid.

Spec fields: exactly one of task_column (a column holding a preassembled Gym task) or messages (declarative, with tools_column, tool_fields, response_params, task_columns, task_values); include (rows whose value is missing or falsy are skipped); scenario_id_column; provenance_columns; scenario_namespace (default "gym"). Column paths are dot-separated; a JSON string met along a path is decoded. The default scenario ID is byte-compatible with the Python plugin.

Example spec (declarative):
  messages:
    - {role: system, content_column: system_prompt}
    - {role: user, content_column: user_query}
  tools_column: tools_json
  task_columns: {ground_truth: reference_plan.tool_calls}
  include: reference_plan.is_valid
  provenance_columns: [seed_id]
  scenario_namespace: workplace

EXIT STATUS
  0  bundles written (or, with --dry-run, validated)
  ${OUTPUT_WRITE_STATUS}
  2  bad spec or bad row (the message names the file, line and field)
  ${PARTIAL_OUTPUT_INTERRUPT_STATUS}`

  static override examples = [
    '<%= config.bin %> tasks build rows.jsonl --spec task-spec.yaml --output scenarios.jsonl',
    '<%= config.bin %> tasks build rows.jsonl --spec task-spec.yaml --output scenarios.jsonl --dry-run --json',
  ]

  static override args = {
    rows: Args.string({description: 'JSONL file of generated rows', required: true}),
  }

  static override flags = {
    spec: Flags.string({description: 'task spec (YAML or JSON)', required: true}),
    output: Flags.string({char: 'o', description: 'scenario bundles to write (JSONL); required unless --dry-run'}),
    'dry-run': Flags.boolean({default: false, description: 'validate everything and report what would be written, without writing'}),
  }

  public async run(): Promise<BuildSummary> {
    const output = outputUnlessDryRun(this.flags.output, this.flags['dry-run'])
    this.dataOutput(output)
    const spec = await loadTaskSpec(this.flags.spec)
    const progress = this.readProgress('tasks build')
    const summary = await buildScenarios({input: this.args.rows, spec, output, dryRun: this.flags['dry-run'], onProgress: progress.update}).finally(progress.stop)
    const verb = summary.dryRun ? 'Would write' : 'Wrote'
    this.say(`${verb} ${plural(summary.bundles, 'scenario bundle')}${summary.output ? ` to ${summary.output}` : ''} (${plural(summary.rows, 'row')}, ${summary.skipped} skipped by include)`)
    if (summary.repeatedScenarioIds > 0) {
      this.warnLine(
        `${plural(summary.repeatedScenarioIds, 'bundle')} ${summary.repeatedScenarioIds === 1 ? 'repeats' : 'repeat'} an earlier scenario_id: they share a task index, and ingest rejects tasks that share one but differ ` +
          '(e.g. in provenance). Set scenario_id_column to keep them apart.',
      )
    }
    return summary
  }
}

import {Flags} from '@oclif/core'

import {BaseCommand} from '../cli/base-command.js'
import {recipeArg, relaxRootFlag} from '../cli/flags.js'
import {usageError} from '../errors.js'
import {recipeLogs, type LogsReport} from '../steps/logs.js'

export default class Logs extends BaseCommand<typeof Logs> {
  static override summary = 'Show the logs of the recipe\'s Gym service container'
  static override description = `Reads the container named in recipe.yaml (service.container) through the Docker Engine API,
stdout and stderr kept apart. A container without the label ai.relax.recipe=<recipe> is refused.
--follow streams until the container stops or Ctrl+C.

EXIT STATUS
  0  logs shown
  1  no such container
  2  bad input
  3  Docker unreachable, or the container is not this recipe's`

  static override examples = [
    '<%= config.bin %> logs calendar --relax-root ~/Relax',
    '<%= config.bin %> logs calendar --relax-root ~/Relax --follow --tail 50',
  ]

  static override args = {
    recipe: recipeArg,
  }

  static override flags = {
    'relax-root': relaxRootFlag,
    follow: Flags.boolean({char: 'f', summary: 'Keep streaming new log lines.', default: false}),
    tail: Flags.integer({summary: 'Only the last N lines (default: all).', min: 0}),
  }

  public async run(): Promise<LogsReport> {
    if (this.flags.follow && this.jsonEnabled()) throw usageError('--follow cannot be combined with --json', 'Drop --follow to get the logs as JSON.')
    // Ctrl+C ends --follow: the logs so far are the command's result.
    return this.interruptible({}, async (signal) => {
      const report = await recipeLogs({
        relaxRoot: this.flags['relax-root'],
        recipe: this.args.recipe,
        env: process.env,
        tail: this.flags.tail,
        follow: this.flags.follow,
        signal,
        sinks: {stdout: this.relayStream('stdout'), stderr: this.relayStream('stderr')},
      })
      if (!this.jsonEnabled()) for (const chunk of report.chunks) this.relay(chunk.stream, chunk.text)
      return report
    })
  }
}

import {BaseCommand} from '../../cli/base-command.js'
import {callArgs, callDescription, callExamples, callFlags, runCallCommand} from '../../gym/call/cli.js'
import type {CallSummary} from '../../gym/call/run.js'

export default class CallResource extends BaseCommand<typeof CallResource> {
  static override summary = 'Call a Gym resource route once per row and keep the evidence'
  static override description = callDescription('resource')
  static override examples = callExamples('resource')
  static override args = callArgs
  static override flags = callFlags

  public async run(): Promise<CallSummary> {
    return runCallCommand(
      {
        say: (m) => this.say(m),
        warnLine: (m) => this.warnLine(m),
        jsonEnabled: () => this.jsonEnabled(),
        withExitCode: (r, c) => this.withExitCode(r, c),
      },
      'resource',
      this.args.rows,
      this.flags,
    )
  }
}

import {BaseCommand} from '../../cli/base-command.js'
import {callArgs, callDescription, callExamples, callFlags, runCallCommand} from '../../gym/call/cli.js'
import type {CallSummary} from '../../gym/call/run.js'

export default class CallHarness extends BaseCommand<typeof CallHarness> {
  static override summary = 'Call a Gym agent harness once per row; keep the final answer and the evidence'
  static override description = callDescription('harness')
  static override examples = callExamples('harness')
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
      'harness',
      this.args.rows,
      this.flags,
    )
  }
}

import {callArgs, callFlags, runCallCommand} from '../gym/call/cli.js'
import type {CallSummary} from '../gym/call/run.js'
import type {CallKind} from '../gym/call/types.js'
import {BaseCommand} from './base-command.js'

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
        withExitCode: (r, c) => this.withExitCode(r, c),
      },
      this.kind,
      this.args.rows,
      this.flags,
    )
  }
}

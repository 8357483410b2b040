import {callDescription, callExamples, CallCommand} from '../../cli/call-command.js'

export default class CallHarness extends CallCommand {
  static override summary = 'Call a Gym agent harness once per row; keep the final answer and the evidence'
  static override description = callDescription('harness')
  static override examples = callExamples('harness')

  protected readonly kind = 'harness'
}

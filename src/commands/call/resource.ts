import {callDescription, callExamples, CallCommand} from '../../cli/call-command.js'

export default class CallResource extends CallCommand {
  static override summary = 'Call a Gym resource route once per row and keep the evidence'
  static override description = callDescription('resource')
  static override examples = callExamples('resource')

  protected readonly kind = 'resource'
}

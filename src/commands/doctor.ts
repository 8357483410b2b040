import {BaseCommand} from '../cli/base-command.js'
import {type DoctorReport, runDoctor} from '../doctor/doctor.js'
import {ExitCode} from '../errors.js'

export default class Doctor extends BaseCommand<typeof Doctor> {
  static override summary = 'Check which host tools gymrecipe and the generated scripts need'
  static override description = `Checks node, bash, shellcheck, python3, the docker CLI and daemon socket, curl, jq and the ray CLI.
Each missing tool comes with a fix. ray is optional: it is needed only on the machine that submits training.

EXIT STATUS
  0  every required tool is present and usable
  3  a required tool is missing or unusable`

  static override examples = ['<%= config.bin %> doctor', '<%= config.bin %> doctor --json']

  public async run(): Promise<DoctorReport> {
    const report = await runDoctor()
    for (const tool of report.tools) {
      const mark = tool.status === 'ok' ? '✔' : tool.required ? '✖' : '!'
      this.say(`${mark} ${tool.id.padEnd(14)} ${tool.message}`)
      if (tool.hint) this.say(`  ${' '.repeat(14)} fix: ${tool.hint}`)
    }
    if (!report.ok) this.warnLine('required tools are missing; see the fixes above')
    const missing = report.tools.filter((tool) => tool.required && tool.status !== 'ok')
    return this.withExitCode(report, report.ok ? ExitCode.ok : ExitCode.precondition, {code: 'E_TOOLS_MISSING', message: `required tools are missing: ${missing.map((tool) => tool.id).join(', ')}`, hint: missing[0]?.hint ?? undefined})
  }
}

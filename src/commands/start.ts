import {Flags} from '@oclif/core'

import {BaseCommand} from '../cli/base-command.js'
import {dryRunFlag, ladderGymRootFlag, recipeArg, relaxRootFlag, smokeFlag} from '../cli/flags.js'
import {ladderFailure, summarizeLadder} from '../cli/ladder-output.js'
import {nextAfterLadder} from '../cli/next-step.js'
import {ExitCode} from '../errors.js'
import {startRecipe, type StartReport} from '../steps/start/index.js'

export default class Start extends BaseCommand<typeof Start> {
  static override summary = 'Step 2: start the recipe\'s Gym service (fresh image, owned container), wait until ready, then verify up to the service rung'
  static override description = `Runs start_<recipe>_gym.sh from the recipe folder: it builds a fresh image from the checkout,
refuses a same-named container that lacks the label ai.relax.recipe=<recipe>, replaces only its
own container, checks the ports and starts the container. Its output (docker build included)
is one progress line on stderr, with its last lines shown on failure; --verbose streams all of it
(as does --json, to stderr). Meanwhile gymrecipe watches the container through the Docker Engine API: a crash
is reported the moment Docker sees it, with the container's last 200 log lines, and /readyz is
polled every 150 ms up to a bounded deadline (--timeout, else NEMO_GYM_START_TIMEOUT_S from
env.sh, else the contract's start_timeout_s). Once ready it climbs static → data → service.

Ctrl+C stops the script's process group and removes the container this run created; the report
says what state the container was left in. A container of another recipe is never touched.

EXIT STATUS
  0    ready, and every rung up to service passed
  1    the container died during start-up, never became ready, or the script failed
  2    bad input (recipe, env.sh)
  3    precondition: Docker unreachable, a foreign container under the name, a port in use
  4    the service started but a rung up to service failed
  130  interrupted (Ctrl+C)`

  static override examples = [
    '<%= config.bin %> start calendar --relax-root ~/Relax',
    '<%= config.bin %> start calendar --relax-root ~/Relax --dry-run',
    '<%= config.bin %> start calendar --relax-root ~/Relax --timeout 900 --json',
  ]

  static override args = {
    recipe: recipeArg,
  }

  static override flags = {
    'relax-root': relaxRootFlag,
    'gym-root': ladderGymRootFlag,
    timeout: Flags.integer({summary: 'Seconds to wait for /readyz after the container starts.', min: 1}),
    smoke: smokeFlag,
    'dry-run': dryRunFlag,
    verbose: Flags.boolean({summary: "Stream the script's whole output (docker build included) as it comes; by default it is one progress line, with the last lines shown on failure.", default: false}),
  }

  public async run(): Promise<StartReport> {
    const output = this.scriptOutput('start script', this.flags.verbose)
    const stopping = this.stoppingNotice('stopping what this start began (press Ctrl+C again to exit at once, skipping cleanup)')
    let report: StartReport
    try {
      report = await this.interruptible({notice: stopping}, (signal) => startRecipe({
        relaxRoot: this.flags['relax-root'],
        recipe: this.args.recipe,
        env: process.env,
        dryRun: this.flags['dry-run'],
        timeoutS: this.flags.timeout,
        gymRoot: this.flags['gym-root'],
        smoke: this.flags.smoke,
        printer: this.ladderPrinter(),
        signal,
        io: {
          scriptOutput: (stream, text) => output.write(stream, text),
          note: (line) => this.logLine(line),
        },
      }))
    } catch (error) {
      output.stop()
      if (!this.flags.verbose) for (const line of output.tail()) this.warnLine(`  | ${line}`)
      throw error
    } finally {
      output.stop()
    }
    if (report.dryRun) {
      const plan = report.plan!
      this.say(`Dry run for ${report.recipe} (${report.dir}); nothing was changed.`)
      this.say(`  would run: ${plan.env.NEMO_GYM_START_NO_WAIT ? 'NEMO_GYM_START_NO_WAIT=1 ' : ''}${report.script.command.join(' ')}`)
      this.say(`  image ${plan.env.NEMO_GYM_IMAGE}, container ${report.container.name} (now: ${report.container.state}), Gateway ${report.gatewayUrl}`)
      this.say(`  action: ${plan.action}`)
      if (plan.envShSourced) this.say(`  read ${report.dir}/env.sh by sourcing it with bash (any command in it ran)`)
      if (plan.ports.length > 0) this.say(`  ports: ${plan.ports.map((p) => `${p.port} ${p.label}`).join(', ')}`)
      this.say(`  then: ${plan.then}`)
      // A dry run exits as the real run would for everything it can know without changing anything.
      return this.withExitCode(report, plan.wouldExit, {code: plan.wouldExit === ExitCode.precondition ? 'E_PRECONDITION' : 'E_FAILED', message: `start would not run: ${plan.action}`})
    }
    if (!report.ladder) return report
    for (const line of summarizeLadder(report.ladder)) this.say(line)
    const next = nextAfterLadder(report.ladder, this.flags['relax-root'])
    if (next) this.say(next)
    return this.withExitCode(report, report.ladder.status === 'pass' ? ExitCode.ok : ExitCode.rungFailed, report.ladder.status === 'pass' ? undefined : ladderFailure(report.ladder))
  }
}

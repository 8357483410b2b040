import {Flags} from '@oclif/core'
import readline from 'node:readline/promises'

import {BaseCommand} from '../cli/base-command.js'
import {dryRunFlag, ladderGymRootFlag, recipeArg, relaxRootFlag, smokeFlag} from '../cli/flags.js'
import {train, type TrainReport} from '../steps/train/index.js'

export default class Train extends BaseCommand<typeof Train> {
  static override summary = 'Step 3: pre-flight, submit the training script, follow the Ray job, then prove the run'
  static override description = `Pre-flight (nothing is submitted unless all pass): the model directory and config.json
exist; NEMO_GYM_SOURCE_DATA is the raw file (never *_relax.jsonl) and the static and data rungs
pass; the Gateway is ready with zero active trials; the Gateway port the training script will use
equals the running service's port (container env, else recipe.yaml); the Ray dashboard (from
RAY_DASHBOARD_ADDRESS, or RAY_ADDRESS as the script derives it) resolves and answers /api/version.

Then runs the generated run-*.sh unmodified from the Relax checkout (bash, own process group,
output streamed), with a fresh unique RELAX_SUBMISSION_ID so gymrecipe knows its job. The script
waits for the job unless RAY_NO_WAIT=1 (then gymrecipe follows it). Status and logs are followed
through the Ray Jobs REST API (headers from RAY_JOB_HEADERS; their values are never printed); the
submission is recorded for \`gymrecipe status\`. When the job ends SUCCEEDED, the training rung
runs: a SUCCEEDED job state alone is never reported as success.

Ctrl+C: on a terminal you are asked whether to stop this run's own submission (by id); otherwise
the exact \`ray job stop\` command is printed, or the job is stopped with --stop-on-interrupt
(SIGTERM is treated like the no-terminal case). Nothing else is ever stopped (no \`ray stop\`).

EXIT STATUS
  0    the job SUCCEEDED and the training rung passed (--dry-run: pre-flight passed)
  1    the job FAILED or was STOPPED, the script ended without submitting, or the job was lost track of
  2    bad input (recipe id, recipe.yaml, env.sh, RAY_JOB_HEADERS)
  3    pre-flight failed: nothing was submitted
  4    the job SUCCEEDED but the training rung failed or could not be fully checked
  130  interrupted`

  static override examples = [
    '<%= config.bin %> train calendar --relax-root ~/Relax',
    '<%= config.bin %> train calendar --relax-root ~/Relax --dry-run',
    'RAY_NO_WAIT=1 <%= config.bin %> train calendar --relax-root ~/Relax --stop-on-interrupt',
  ]

  static override args = {
    recipe: recipeArg,
  }

  static override flags = {
    'relax-root': relaxRootFlag,
    'dry-run': dryRunFlag,
    'stop-on-interrupt': Flags.boolean({summary: 'When interrupted without a terminal to ask, stop this run\'s own submission (by id).', default: false}),
    smoke: smokeFlag,
    'gym-root': ladderGymRootFlag,
    'worker-log': Flags.string({summary: 'Ray worker log file or directory for the training rung to scan for OOM and tracebacks (repeatable).', multiple: true}),
    'poll-interval': Flags.integer({summary: 'Seconds between Ray Jobs API polls.', default: 2, min: 1, hidden: true}),
  }

  public async run(): Promise<TrainReport> {
    const json = this.jsonEnabled()
    const interactive = !json && Boolean(process.stdin.isTTY) && Boolean(process.stderr.isTTY)
    // The first interrupt starts train's own wind-down (asking about the job on a terminal); a second one must not cut it short.
    return this.interruptible({keepsSecond: true}, async (interrupt) => {
      const report = await train({
        relaxRoot: this.flags['relax-root'],
        recipe: this.args.recipe,
        env: process.env,
        dryRun: this.flags['dry-run'],
        stopOnInterrupt: this.flags['stop-on-interrupt'],
        smoke: this.flags.smoke,
        gymRoot: this.flags['gym-root'],
        workerLogs: this.flags['worker-log'],
        interrupt,
        pollIntervalMs: this.flags['poll-interval'] * 1000,
        say: (line) => this.say(line),
        working: this.stepLine(),
        passthrough: json ? undefined : (stream, text) => this.relay(stream, text),
        confirm: interactive
          ? async (question) => {
              const rl = readline.createInterface({input: process.stdin, output: process.stderr})
              // A second Ctrl+C while asking means "no": leave the job alone.
              const answer = new Promise<string>((resolve) => rl.once('SIGINT', () => resolve('')))
              try {
                return /^y(es)?$/i.test((await Promise.race([rl.question(question), answer])).trim())
              } finally {
                rl.close()
              }
            }
          : undefined,
      })
      this.say(`${report.exitCode === 0 ? '✔' : '✖'} ${report.message}`)
      return this.withExitCode(report, report.exitCode, {code: `E_TRAIN_${report.outcome.toUpperCase().replaceAll('-', '_')}`, message: report.message, hint: report.stopCommand ? `stop the job with: ${report.stopCommand}` : undefined})
    })
  }
}

import {Flags} from '@oclif/core'

import {BaseCommand} from '../cli/base-command.js'
import {ladderGymRootFlag, recipeArg, relaxRootFlag, smokeFlag} from '../cli/flags.js'
import {ladderFailure, summarizeLadder} from '../cli/ladder-output.js'
import {nextAfterLadder} from '../cli/next-step.js'
import {ExitCode} from '../errors.js'
import {RUNG_DEFINITIONS, RUNGS, verifyRecipe, type LadderReport, type Rung, type TrainingRungOptions, type TrialRungOptions, type VerifyOptions} from '../ladder/index.js'

export default class Verify extends BaseCommand<typeof Verify> {
  static override summary = 'Climb the validation ladder of a recipe up to a rung'
  static override description = `Rungs, in order, and what passing each proves:
${RUNG_DEFINITIONS.map((d) => `  ${d.rung.padEnd(9)}${d.summary}`).join('\n')}

Every rung below --level runs first and the climb stops at the first rung that does not pass. A check that
cannot run here is reported as "not checked", never as a pass. /readyz, a SUCCEEDED job or a
one-sample rollout are never accepted as proof.

--only <rung> checks one rung on its own against what is deployed now, e.g. the training rung
once the cluster run is over and the local service is gone. The ladder is not climbed: the
report says so, and a pass never means the recipe is verified.

static works on any recipe folder with the seven files, hand-written ones too; without a
recipe.yaml, pass --gym-root so graph names can be checked against the Gym config.

EXIT STATUS
  0  every rung up to --level passed (with --only: that rung passed)
  2  bad input (recipe id, recipe.yaml)
  4  a rung failed or could not be fully checked`

  static override examples = [
    '<%= config.bin %> verify calendar --level static --relax-root ~/Relax',
    '<%= config.bin %> verify calendar --level data --relax-root ~/Relax --json',
    '<%= config.bin %> verify my-hand-written-recipe --level static --relax-root ~/Relax --gym-root ~/Gym',
    '<%= config.bin %> verify workplace-assistant --level trial --relax-root ~/Relax --callback-host 10.0.0.12',
    '<%= config.bin %> verify calendar --level training --relax-root ~/Relax --worker-log /tmp/ray/session_latest/logs',
    '<%= config.bin %> verify calendar --only training --relax-root ~/Relax --job-log log/qwen3-4B-8xgpu-nemo-gym-calendar-2026-12-01.log',
  ]

  static override args = {
    recipe: recipeArg,
  }

  static override flags = {
    level: Flags.string({summary: 'Highest rung to climb.', options: [...RUNGS], default: 'static', exclusive: ['only']}),
    only: Flags.string({summary: 'Check this one rung on its own against what is deployed now (the ladder is not climbed).', options: [...RUNGS], exclusive: ['level']}),
    'relax-root': relaxRootFlag,
    'gym-root': ladderGymRootFlag,
    smoke: smokeFlag,
    'callback-host': Flags.string({summary: 'trial: host the scripted model listens on and the Gateway calls back (default: GYM_HOST); must be inside the callback allowlist.'}),
    'callback-port': Flags.integer({summary: 'trial: port of the scripted model (default: any free port).', min: 1, max: 65535}),
    'job-log': Flags.file({summary: 'training: the driver log (default: the recorded submission via the Ray Jobs API, else the newest log/<run>-<time>.log).'}),
    'worker-log': Flags.string({summary: 'training: a Ray worker log file or directory to scan for OOM and tracebacks (repeatable).', multiple: true}),
  }

  public async run(): Promise<LadderReport> {
    const options: VerifyOptions & TrialRungOptions & TrainingRungOptions = {
      relaxRoot: this.flags['relax-root'],
      recipe: this.args.recipe,
      level: (this.flags.only ?? this.flags.level) as Rung,
      only: this.flags.only !== undefined,
      gymRoot: this.flags['gym-root'],
      smoke: this.flags.smoke,
      env: process.env,
      printer: this.ladderPrinter(),
      callbackHost: this.flags['callback-host'],
      callbackPort: this.flags['callback-port'],
      jobLog: this.flags['job-log'],
      workerLogs: this.flags['worker-log'],
    }
    const report = await verifyRecipe(options)
    for (const line of summarizeLadder(report)) this.say(line)
    const next = nextAfterLadder(report, options.relaxRoot)
    if (next) this.say(next)
    return this.withExitCode(report, report.status === 'pass' ? ExitCode.ok : ExitCode.rungFailed, report.status === 'pass' ? undefined : ladderFailure(report))
  }
}

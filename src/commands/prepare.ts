import {Flags} from '@oclif/core'
import path from 'node:path'

import {BaseCommand, type Failure} from '../cli/base-command.js'
import {dryRunFlag, ladderGymRootFlag, recipeArg, relaxRootFlag, smokeFlag} from '../cli/flags.js'
import {ladderFailure, summarizeLadder} from '../cli/ladder-output.js'
import {sinkStream} from '../cli/progress.js'
import {nextAfterLadder} from '../cli/next-step.js'
import {ExitCode} from '../errors.js'
import {prepareRecipe, type PrepareResult} from '../steps/prepare.js'

const EXIT_FOR: Record<PrepareResult['status'], number> = {
  planned: ExitCode.ok,
  pass: ExitCode.ok,
  fail: ExitCode.rungFailed,
  'script-failed': ExitCode.failure,
  interrupted: ExitCode.interrupted,
}

/** Why prepare did not pass, for the --json envelope. */
function failureOf(r: PrepareResult): Failure | undefined {
  const script = path.basename(r.command.at(-1) ?? 'the prepare script')
  if (r.status === 'interrupted') return {code: 'E_INTERRUPTED', message: `${script} was stopped (interrupted)`}
  if (r.status === 'script-failed') {
    const last = [...(r.script?.stderrTail ?? []), ...(r.script?.stdoutTail ?? [])].filter((l) => l.trim()).at(-1)
    return {code: 'E_SCRIPT_FAILED', message: `${script} exited with ${r.script?.exitCode ?? r.script?.signal ?? '?'}${last ? `: ${last.trim()}` : ''}`, hint: r.hint}
  }
  if (r.status === 'fail' && r.ladder) return ladderFailure(r.ladder)
  return undefined
}

export default class Prepare extends BaseCommand<typeof Prepare> {
  static override summary = "Step 1: run the recipe's prepare script, then verify the data (static → data rungs)"
  static override description = `Runs prepare_<recipe>.sh with bash from the Relax root (the script sources its env.sh). It
materializes the dataset split inside the Gym image onto NEMO_GYM_SOURCE_DATA, validates and
converts the rows and publishes them atomically. Its output (docker build included) is one
progress line on stderr, with its last lines shown on failure; --verbose streams all of it (as
does --json, to stderr, so stdout stays pure JSON). Nothing is retried: a failure is reported with the script's
exit code, its last lines and what to do.

Then the ladder is climbed static → data: the raw file (absolute, the expected name, non-empty),
every line a JSON object, every verifier field in every row, raw vs converted row counts, the
split guard, conversion preservation (checked against the checkout's convert_dataset.py) and a
probe container that must see the file at the same absolute path.

Ctrl+C stops the script's process group (SIGTERM, then SIGKILL after 10 s).

EXIT STATUS
  0    the script succeeded and every rung up to data passed (or --dry-run)
  1    the prepare script failed
  2    bad input (recipe id, recipe.yaml, env.sh, no prepare script)
  3    precondition: bash missing
  4    the script succeeded but a rung up to data failed or could not be fully checked
  130  interrupted (Ctrl+C)`

  static override examples = [
    '<%= config.bin %> prepare calendar --relax-root ~/Relax',
    '<%= config.bin %> prepare calendar --relax-root ~/Relax --dry-run',
    '<%= config.bin %> prepare calendar-smoke --relax-root ~/Relax --smoke --json',
  ]

  static override args = {
    recipe: recipeArg,
  }

  static override flags = {
    'relax-root': relaxRootFlag,
    'gym-root': ladderGymRootFlag,
    smoke: smokeFlag,
    'dry-run': dryRunFlag,
    verbose: Flags.boolean({summary: "Stream the script's whole output (docker build included) as it comes; by default it is one progress line, with the last lines shown on failure.", default: false}),
  }

  public async run(): Promise<PrepareResult> {
    const output = this.scriptOutput('prepare script', this.flags.verbose)
    const stopping = this.stoppingNotice('stopping the prepare script (Ctrl+C again exits at once)')
    const result = await this.interruptible({notice: stopping}, (signal) =>
      prepareRecipe({
        relaxRoot: this.flags['relax-root'],
        recipe: this.args.recipe,
        dryRun: this.flags['dry-run'],
        smoke: this.flags.smoke,
        gymRoot: this.flags['gym-root'],
        env: process.env,
        printer: this.ladderPrinter(),
        stdout: sinkStream(output, 'stdout'),
        stderr: sinkStream(output, 'stderr'),
        note: (line) => this.say(line),
        signal,
      }),
    ).finally(() => output.stop())
    this.report(result)
    return this.withExitCode(result, EXIT_FOR[result.status], failureOf(result))
  }

  private report(r: PrepareResult): void {
    if (r.status === 'planned') {
      this.say(`Dry run for ${r.recipe} (${r.dir}); nothing was run.`)
      this.say(`  would run: (cd ${r.cwd} && ${r.command.join(' ')})`)
      if (r.envShSourced) this.say(`  read ${r.dir}/env.sh by sourcing it with bash (any command in it ran)`)
      this.say(`  it writes: ${r.source ?? 'NEMO_GYM_SOURCE_DATA (not set in env.sh!)'}${r.preview ? ` and the preview ${r.preview}` : ''}`)
      this.say(`  in image:  ${r.image ?? 'NEMO_GYM_IMAGE (not set in env.sh!)'} (built from the checkout if missing)`)
      this.say(`  then:      climb static → ${r.level}${r.smoke ? ' (SMOKE run)' : ''}`)
      return
    }
    const script = r.script!
    const took = `${(script.durationMs / 1000).toFixed(1)}s`
    if (r.status === 'script-failed' || r.status === 'interrupted') {
      const how = r.status === 'interrupted' ? 'was stopped' : `exited with ${script.exitCode ?? script.signal}`
      this.say(`✖ ${path.basename(r.command.at(-1) ?? '')} ${how} after ${took}`)
      const lines = [...script.stdoutTail.slice(-8), ...script.stderrTail.slice(-12)]
      if (lines.length > 0) this.say('  last lines of its output:')
      for (const line of lines) this.say(`    ${line}`)
      if (r.hint) this.say(`  hint: ${r.hint}`)
      return
    }
    if (r.ladder) {
      for (const line of summarizeLadder(r.ladder)) this.say(line)
      const next = nextAfterLadder(r.ladder, this.flags['relax-root'])
      if (next) this.say(next)
    }
  }
}

import {Flags} from '@oclif/core'

import {BaseCommand} from '../cli/base-command.js'
import {dryRunFlag, recipeArg, relaxRootFlag} from '../cli/flags.js'
import {usageError} from '../errors.js'
import {handoffLines, type HandoffReport, recipeHandoff} from '../steps/handoff.js'

export default class Handoff extends BaseCommand<typeof Handoff> {
  static override summary = 'What the next person needs to run the recipe without gymrecipe, and what is not proven yet'
  static override description = `Prints the three commands to run from the Relax root (the recipe's own scripts, no gymrecipe),
the variables those scripts stop on when unset, the absolute data path and checkpoint directory,
and every rung of the ladder that has not passed on the inputs of now, each with the command that
checks it.

A rung passed earlier is "stale" when what it depended on has changed since (the recipe's
scripts or recipe.yaml, the data file's size or time, the service image, the Gateway process,
the training submission), and "unconfirmed" when the service cannot be asked now. Verdicts are
kept under \${XDG_STATE_HOME:-~/.local/state}/gymrecipe/ladder/ by every climb.

--write puts the same hand-off in the "Hand-off" section of the recipe's README.md; regenerating
the recipe keeps that section.

EXIT STATUS
  0  hand-off shown (whatever the rungs' standing)
  1  README.md could not be written
  2  bad input (recipe id, recipe.yaml), --dry-run without --write`

  static override examples = [
    '<%= config.bin %> handoff calendar --relax-root ~/Relax',
    '<%= config.bin %> handoff calendar --relax-root ~/Relax --write',
    '<%= config.bin %> handoff calendar --relax-root ~/Relax --json',
  ]

  static override args = {recipe: recipeArg}

  static override flags = {
    'relax-root': relaxRootFlag,
    write: Flags.boolean({summary: "Also put the hand-off in the recipe's README.md (its Hand-off section).", default: false}),
    'dry-run': dryRunFlag,
  }

  public async run(): Promise<HandoffReport> {
    const f = this.flags
    if (f['dry-run'] && !f.write) throw usageError('--dry-run only applies with --write', 'Run `gymrecipe handoff <recipe>` to see the hand-off; add --write to record it in README.md.')
    const report = await recipeHandoff({relaxRoot: f['relax-root'], recipe: this.args.recipe, env: process.env, write: f.write, dryRun: f['dry-run']})
    for (const line of handoffLines(report)) this.say(line)
    if (report.written) this.say(`${f['dry-run'] ? 'would write' : 'written'}: the Hand-off section of ${report.written}`)
    return report
  }
}

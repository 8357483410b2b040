import {Flags} from '@oclif/core'

import {BaseCommand} from '../cli/base-command.js'
import {dryRunFlag, ladderGymRootFlag, recipeArg, relaxRootFlag} from '../cli/flags.js'
import {relaxRootWord} from '../cli/next-step.js'
import {ExitCode} from '../errors.js'
import {adoptRecipe, type AdoptResult, DRAFT_FILE} from '../steps/adopt/index.js'

export default class Adopt extends BaseCommand<typeof Adopt> {
  static override summary = 'Record the contract of a hand-written recipe in recipe.yaml, from what its scripts actually do'
  static override description = `Reads the recipe folder the way the static rung does, in any of the layouts Relax uses (one or
two training scripts, an in-container launcher with or without a host-side _remote.sh or an
attaching _local.sh, a prepare script run on the host or in the image, direct and trial
verifiers): graph names from the launcher's overrides, checked against the Gym config under
--gym-root; ports; the Gateway registration; every training array; the raw data file and its
split; the service container; the file names it already has.

What cannot be read (verifier examples live in code, a flag left to Relax's default, a Ray port
Ray picks) is never guessed: it is listed with the reason, and ${DRAFT_FILE} is written with each
such value "<fill in>". Replace them (null is an answer too) and run adopt again; recipe.yaml is written once
nothing is missing. --fill-from <built-in> fills what is left from a built-in recipe instead,
and lists every value it took. Then \`gymrecipe new <recipe> --update --dry-run --diff\` shows what
regeneration would change.

EXIT STATUS
  0  recipe.yaml written (or, with --dry-run, everything could be read)
  1  a file could not be written
  2  bad input: recipe id, no such recipe folder, an invalid draft, an unknown --fill-from
  3  values are still missing (listed; the draft was written); recipe.yaml already exists (--force)`

  static override examples = [
    '<%= config.bin %> adopt gsm8k --relax-root ~/Relax --gym-root ~/Gym',
    '<%= config.bin %> adopt gsm8k --relax-root ~/Relax --gym-root ~/Gym --fill-from calendar',
    '<%= config.bin %> adopt gsm8k --relax-root ~/Relax --gym-root ~/Gym --dry-run --json',
  ]

  static override args = {recipe: recipeArg}

  static override flags = {
    'relax-root': relaxRootFlag,
    'gym-root': ladderGymRootFlag,
    'fill-from': Flags.string({summary: 'Fill what cannot be read from this built-in recipe (calendar, workplace-assistant, r2e-gym); each value is listed.'}),
    force: Flags.boolean({summary: 'Read the scripts again and replace an existing recipe.yaml.', default: false}),
    'dry-run': dryRunFlag,
  }

  public async run(): Promise<AdoptResult> {
    const f = this.flags
    const result = await adoptRecipe({relaxRoot: f['relax-root'], recipe: this.args.recipe, gymRoot: f['gym-root'], fillFrom: f['fill-from'], force: f.force, dryRun: f['dry-run'], env: process.env})
    this.say(`${result.recipe}: read ${result.read.length} value(s) from ${result.dir}`)
    for (const field of result.read) this.say(`  read     ${field.pointer.padEnd(40)} ${field.from}`)
    for (const field of result.filled) this.say(`  filled   ${field.pointer.padEnd(40)} ${field.from}`)
    for (const field of result.unfilled) this.say(`  missing  ${field.pointer.padEnd(40)} ${field.why}`)
    for (const note of result.notes) this.say(`note: ${note}`)
    const verb = result.dryRun ? 'would write' : 'wrote'
    if (result.complete) {
      this.say(`${verb} ${result.file}`)
      this.say(`next: gymrecipe new ${result.recipe} --update --dry-run --diff --relax-root ${relaxRootWord(f['relax-root'])} --gym-root <gym-root>  (what regeneration would change)`)
      return result
    }
    this.say(`${verb} ${result.file}: ${result.unfilled.length} value(s) to fill in, then run adopt again (or pass --fill-from <built-in>)`)
    return this.withExitCode(result, ExitCode.precondition, {code: 'E_ADOPT_INCOMPLETE', message: `${result.file}: ${result.unfilled.length} value(s) to fill in: ${result.unfilled.map((field) => field.pointer).join(', ')}`, hint: 'Fill them in and run adopt again, or pass --fill-from <built-in>.'})
  }
}

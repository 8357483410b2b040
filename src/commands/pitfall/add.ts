import {Flags} from '@oclif/core'

import {BaseCommand} from '../../cli/base-command.js'
import {dryRunFlag, recipeArg, relaxRootFlag} from '../../cli/flags.js'
import {addPitfall, type PitfallAddResult} from '../../steps/pitfall.js'

export default class PitfallAdd extends BaseCommand<typeof PitfallAdd> {
  static override summary = "Record one failure in the recipe's PITFAIL.md: symptom → cause → fix"
  static override description = `Appends one numbered entry, one line per part, to the "Recorded in this recipe" section of
PITFAIL.md. That section is yours: regenerating the recipe (gymrecipe new) keeps it as it is.
A symptom already in the file (case, markup and punctuation aside) is refused.

--from-last-failure drafts the entry from the last check that failed on any rung of this
recipe: its message becomes the symptom, its hint the fix. Review the draft with --edit (opens
$VISUAL or $EDITOR), replace any part with --symptom/--cause/--fix, or accept it with --yes.

EXIT STATUS
  0  recorded (or, with --dry-run, shown)
  1  PITFAIL.md could not be written
  2  bad input: a missing or empty part, a part longer than one line or 300 characters, a draft not accepted
  3  the symptom is already recorded; no failed check is recorded (--from-last-failure); the editor failed`

  static override examples = [
    '<%= config.bin %> pitfall add calendar --relax-root ~/Relax --symptom "Gateway answers 502 on every trial" --cause "the agent port collided with a Jupyter server" --fix "move the port block with new --port-base"',
    '<%= config.bin %> pitfall add calendar --relax-root ~/Relax --from-last-failure --edit',
    '<%= config.bin %> pitfall add calendar --relax-root ~/Relax --from-last-failure --yes',
  ]

  static override args = {recipe: recipeArg}

  static override flags = {
    'relax-root': relaxRootFlag,
    symptom: Flags.string({summary: 'What you saw, one line (an error message, a wrong number).'}),
    cause: Flags.string({summary: 'Why it happened, one line.'}),
    fix: Flags.string({summary: 'What fixed it, one line.'}),
    'from-last-failure': Flags.boolean({summary: 'Draft the entry from the last failed check of this recipe.', default: false}),
    edit: Flags.boolean({summary: 'Open the entry in $VISUAL or $EDITOR before recording it.', default: false}),
    yes: Flags.boolean({summary: 'Accept the drafted entry as it is.', default: false}),
    'dry-run': dryRunFlag,
  }

  public async run(): Promise<PitfallAddResult> {
    const f = this.flags
    const result = await addPitfall({
      relaxRoot: f['relax-root'],
      recipe: this.args.recipe,
      symptom: f.symptom,
      cause: f.cause,
      fix: f.fix,
      fromLastFailure: f['from-last-failure'],
      edit: f.edit,
      accepted: f.yes,
      dryRun: f['dry-run'],
      env: process.env,
    })
    this.say(`${result.dryRun ? 'would record' : 'recorded'} entry ${result.number} in ${result.file}${result.from ? ` (from ${result.from.check}, ${result.from.at})` : ''}:`)
    this.say(`  ${result.line}`)
    return result
  }
}

import {BaseCommand} from '../cli/base-command.js'
import {recipeArg, relaxRootFlag} from '../cli/flags.js'
import {recipeStatus, statusLines, type StatusReport} from '../steps/status.js'

export default class Status extends BaseCommand<typeof Status> {
  static override summary = 'The recipe\'s last training job, its Gateway and its Gym container at a glance'
  static override description = `Job: the submission \`gymrecipe train\` recorded (under \${XDG_STATE_HOME:-~/.local/state}/gymrecipe/runs/),
read back through the Ray Jobs REST API (headers from RAY_JOB_HEADERS). A SUCCEEDED job is not proof
of training; use \`gymrecipe verify --level training\`.
Gateway: /readyz of http://\${GYM_HOST}:\${NEMO_GYM_GATEWAY_PORT} (epoch, trials, active trials).
Container: state, image and ownership label (ai.relax.recipe) of the recipe's Gym container.
Ladder: each rung's last verdict as it stands now: passed, failed, incomplete, stale (what it was
judged on has changed since), unconfirmed (the service cannot be asked now) or never checked;
\`gymrecipe handoff\` gives the command that checks each one.
Read-only: nothing is started or stopped.

EXIT STATUS
  0  status shown (whatever the job, Gateway or container state)
  2  bad input (recipe id, recipe.yaml, env.sh)`

  static override examples = ['<%= config.bin %> status calendar --relax-root ~/Relax', '<%= config.bin %> status calendar --relax-root ~/Relax --json']

  static override args = {
    recipe: recipeArg,
  }

  static override flags = {
    'relax-root': relaxRootFlag,
  }

  public async run(): Promise<StatusReport> {
    const report = await recipeStatus({relaxRoot: this.flags['relax-root'], recipe: this.args.recipe, env: process.env})
    for (const line of statusLines(report)) this.say(line)
    return report
  }
}

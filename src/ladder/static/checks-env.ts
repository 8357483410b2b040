/** env.sh holds deployment values only: no training value, nothing run. */

import {ENV_SH_RULE, envShProblems} from '../../env-sh.js'
import {type Check, type CheckOutcome, passOrProblems} from '../types.js'
import {recipeFiles} from './recipe-files.js'
import {assignments} from '../../recipe/shell.js'

// ------------------------------------------------------------------ env.sh

/** Names that are training hyperparameters, budgets or parser choices, never deployment values. */
const HYPERPARAMETER = /(?:^|_)(?:LR|LEARNING_RATE|BATCH_SIZE|GLOBAL_BATCH\w*|MICRO_BATCH\w*|ROLLOUT_BATCH\w*|N_SAMPLES\w*|SAMPLES_PER_PROMPT|NUM_ROLLOUTS?|NUM_EPOCHS?|EPOCHS?|CONTEXT_LEN\w*|CONTEXT_LENGTH|MAX_CONTEXT\w*|MAX_PROMPT\w*|MAX_RESPONSE\w*|MAX_TOKENS\w*|PROMPT_LEN\w*|RESPONSE_LEN\w*|TEMPERATURE|TOP_P|TOP_K|\w*PARSER|KL_\w+|ENTROPY\w*|EPS_CLIP\w*|WEIGHT_DECAY|ADAM_\w+|TENSOR_PARALLEL\w*|TP_SIZE|PP_SIZE|CP_SIZE|SAVE_INTERVAL|DATA_LIMIT|MAX_STEPS|WARMUP\w*|ADVANTAGE\w*)(?:$|_)/

/** env.sh is not committed in Relax (.gitignore): without it the checks that read it cannot run. */
function envMissing(ctx: Parameters<Check['run']>[0]): CheckOutcome {
  return {
    status: 'skip',
    message: 'not checked: there is no env.sh (Relax keeps it out of git; each deployment writes its own)',
    hint: ctx.target.contract ? `Recreate it with \`gymrecipe new ${ctx.target.id}\`, then set GYM_HOST, MODEL_DIR and NEMO_GYM_SOURCE_DATA.` : "Create env.sh next to the scripts with the deployment values the recipe's README lists (GYM_HOST, MODEL_DIR, NEMO_GYM_SOURCE_DATA, ...).",
  }
}

export const envDeploymentOnly: Check = {
  id: 'static.env-deployment-only',
  title: 'env.sh holds deployment values only',
  async run(ctx) {
    const env = (await recipeFiles(ctx)).byRole.env
    if (!env) return envMissing(ctx)
    const problems: CheckOutcome[] = []
    for (const p of envShProblems(env.text)) {
      problems.push({status: 'fail', message: `line ${p.line} can run a command: ${p.problem}: ${JSON.stringify(p.text.slice(0, 80))}`, file: env.name, line: p.line, hint: ENV_SH_RULE})
    }
    for (const a of assignments(env.lines)) {
      if (HYPERPARAMETER.test(a.name)) {
        problems.push({status: 'fail', message: `${a.name} is a training hyperparameter, budget or parser setting`, file: env.name, line: a.line, hint: `Hard-code it in the training script; env.sh is for machines, ports and paths only.`})
      }
    }
    const source = assignments(env.lines).find((a) => a.name === 'NEMO_GYM_SOURCE_DATA')
    if (source && /_relax\.jsonl/.test(source.value)) {
      problems.push({status: 'fail', message: 'NEMO_GYM_SOURCE_DATA points at a converted *_relax.jsonl preview', file: env.name, line: source.line, hint: 'Point it at the raw Gym JSONL; the training job converts it.'})
    }
    return passOrProblems('static.env-deployment-only', 'env.sh holds deployment values only', problems, `${assignments(env.lines).length} deployment variables, no commands`)
  },
}

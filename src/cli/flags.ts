import {Args, Flags} from '@oclif/core'

/** Arguments and flags shared by every command that works on a recipe inside a Relax checkout. */
export const recipeArg = Args.string({description: 'Recipe id (folder under examples/nemo_gym_agentic/recipes).', required: true})

export const relaxRootFlag = Flags.directory({
  summary: 'Relax checkout holding examples/nemo_gym_agentic/recipes/<recipe>.',
  env: 'GYMRECIPE_RELAX_ROOT',
  default: '.',
})

export const gymRootFlag = Flags.directory({
  summary: 'Pinned NeMo Gym checkout (configs and data are read from it).',
  env: 'GYMRECIPE_GYM_ROOT',
  required: true,
})

/** For the commands that climb the ladder: optional, since recipe.yaml records the graph names; a hand-written recipe has none. */
export const ladderGymRootFlag = Flags.directory({
  summary: "Pinned NeMo Gym checkout to check the scripts' graph names against (needed for a recipe without recipe.yaml).",
  env: 'GYMRECIPE_GYM_ROOT',
})

export const dryRunFlag = Flags.boolean({summary: 'Show what would change; change nothing.', default: false})

export const smokeFlag = Flags.boolean({summary: 'Accept a non-training split for a smoke run; every report says so.', default: false})

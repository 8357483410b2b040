import os from 'node:os'
import path from 'node:path'
import {Args, Flags} from '@oclif/core'

import {BaseCommand} from '../cli/base-command.js'
import {dryRunFlag, gymRootFlag, relaxRootFlag} from '../cli/flags.js'
import {relaxRootWord} from '../cli/next-step.js'
import {EXTRA_ROOT_NAME} from '../contract/gym-config/paths.js'
import {SCHEDULE_MODES, type ScheduleMode} from '../contract/schedule.js'
import {ARCHETYPES, type Archetype, serviceBlockPorts} from '../contract/types.js'
import {ExitCode, usageError} from '../errors.js'
import {newRecipe, type NewRecipeResult} from '../scaffold/new-recipe.js'
import {parseSecondModelFlag} from '../scaffold/second-model-servers.js'
import {DELETED_AND_CHANGED} from '../scaffold/update.js'

/** `NAME=DIR` of --config-root; the directory is made absolute, `~/` expanded as a shell would. */
function parseConfigRoot(value: string): {name: string; dir: string} {
  const at = value.indexOf('=')
  const name = at > 0 ? value.slice(0, at) : ''
  const dir = at > 0 ? value.slice(at + 1) : ''
  if (!EXTRA_ROOT_NAME.test(name) || dir === '') {
    throw usageError(`--config-root ${JSON.stringify(value)} is not NAME=DIR`, 'Name the tree like an environment variable, e.g. --config-root RELAX_INTEGRATION_ROOT=/srv/relax-integration.', {field: '--config-root'})
  }
  return {name, dir: path.resolve(dir.startsWith('~/') ? path.join(os.homedir(), dir.slice(2)) : dir)}
}

/** ENVIRONMENT=ROWS pairs, one per environment. */
function parseMixCaps(values: string[]): Record<string, number> {
  const caps: Record<string, number> = {}
  for (const value of values) {
    const match = /^([A-Za-z0-9][A-Za-z0-9_.-]*)=(\d{1,9})$/.exec(value)
    if (!match) throw usageError(`--mix-cap ${JSON.stringify(value)} is not ENVIRONMENT=ROWS`, 'e.g. --mix-cap math_with_judge=2400 (0 keeps every row).', {field: '--mix-cap'})
    if (Object.hasOwn(caps, match[1])) throw usageError(`--mix-cap names ${match[1]} twice`, 'Cap each environment once.', {field: '--mix-cap'})
    caps[match[1]] = Number(match[2])
  }
  return caps
}

export default class New extends BaseCommand<typeof New> {
  static override summary = 'Record an environment contract from its NeMo Gym config and generate the seven recipe files'
  static override description = `Reads the pinned Gym config (graph names always come from the YAML, never from directory
names), records the contract in recipe.yaml and renders env.sh, prepare_<recipe>.sh,
start_<recipe>_gym.sh, run-<model>-nemo-gym-<recipe>.sh, verify_<recipe>.py, README.md and
PITFAIL.md into <relax-root>/examples/nemo_gym_agentic/recipes/<recipe>/.

Values the Gym config does not hold (training arrays, Gateway limits, verifier examples) come
from a built-in recipe: --from, or the base of --archetype. A free port block is picked unless
--port-base is given. Re-running never overwrites a file you edited: it lists them and stops
(--force overwrites, --dry-run shows the plan and the diff).

--update merges instead: your files, the files as gymrecipe last generated them (kept in the
recipe's .gymrecipe/last-generated/) and the files generated now. recipe.yaml is merged first,
so your contract edits and changed options both reach the scripts; then each file keeps your
edits and takes the regenerated changes. The same lines changed on both sides are written with
<<<<<<< yours / ======= / >>>>>>> generated now markers and listed. A file you deleted stays
deleted. Options you do not give again (--gym-config, --from, ports, model, GPUs, agent,
dataset) are read from recipe.yaml. Needs git (git merge-file).

EXIT STATUS
  0  generated or updated (or, with --dry-run, planned without conflicts)
  1  a file could not be written (no space, read-only, permission); nothing is left half-made
  2  bad input: recipe id, Gym config, contract, ports, missing --agent, a recipe folder that is a link,
     --update without a recipe.yaml
  3  files changed by hand since generation (use --update to merge, --force to overwrite);
     with --update: conflicts were written with markers; git is missing`

  static override examples = [
    '<%= config.bin %> new calendar-v2 --gym-root ~/Gym --gym-config environments/calendar/config.yaml --relax-root ~/Relax',
    '<%= config.bin %> new my-tools --from workplace-assistant --gym-root ~/Gym --gym-config resources_servers/workplace_assistant/configs/workplace_assistant.yaml --relax-root ~/Relax',
    '<%= config.bin %> new my-tools --from workplace-assistant --gym-root ~/Gym --gym-config resources_servers/workplace_assistant/configs/workplace_assistant.yaml --data ~/tasks/gym-tasks.jsonl --relax-root ~/Relax',
    '<%= config.bin %> new my-env --gym-root ~/Gym --config-root MY_ENV_ROOT=~/my-env --gym-config ~/my-env/configs/my_env.yaml --data ~/my-env/gym-tasks.jsonl --relax-root ~/Relax',
    '<%= config.bin %> new mcqa-smoke --gym-root ~/Gym --gym-config resources_servers/mcqa/configs/mcqa.yaml --data ~/Gym/resources_servers/mcqa/data/example.jsonl --relax-root ~/Relax',
    '<%= config.bin %> new lc-judge --gym-root ~/Gym --gym-config resources_servers/equivalence_llm_judge/configs/lc_judge.yaml --second-model judge --relax-root ~/Relax',
    '<%= config.bin %> new multienv --gym-root ~/Gym --gym-config resources_servers/math_with_judge/configs/math_with_judge.yaml --gym-config resources_servers/workplace_assistant/configs/workplace_assistant.yaml --agent math_with_judge_simple_agent --agent workplace_assistant_simple_agent --mix-cap math_with_judge=2400 --relax-root ~/Relax',
    '<%= config.bin %> new workplace-hybrid --from workplace-assistant --gym-root ~/Gym --gym-config resources_servers/workplace_assistant/configs/workplace_assistant.yaml --schedule hybrid --relax-root ~/Relax',
    '<%= config.bin %> new calendar-v2 --gym-root ~/Gym --gym-config environments/calendar/config.yaml --relax-root ~/Relax --dry-run',
    '<%= config.bin %> new calendar-v2 --gym-root ~/Gym --relax-root ~/Relax --update --port-base 21000 --dry-run --diff',
  ]

  static override args = {
    recipe: Args.string({description: 'Recipe id: up to 48 lowercase letters, digits and hyphens (e.g. calendar-v2).', required: true}),
  }

  static override flags = {
    'gym-root': gymRootFlag,
    'gym-config': Flags.string({summary: 'Gym config path relative to --gym-root; repeat to merge several (with --update: default the recorded ones).', multiple: true}),
    'relax-root': relaxRootFlag,
    from: Flags.string({summary: 'Start from a built-in recipe: calendar, workplace-assistant, r2e-gym, or multienv-math-workplace (Relax\'s training values for math and workplace in one run).'}),
    archetype: Flags.string({summary: 'Recipe archetype (default: that of --from, else simple-agent).', options: [...ARCHETYPES]}),
    agent: Flags.string({summary: 'Agent instance id, required when the config defines several; repeat it to train several environments in one run (the first is the primary).', multiple: true}),
    dataset: Flags.string({summary: 'Dataset name of the agent to train on (default: its train dataset).'}),
    smoke: Flags.boolean({summary: 'Accept a validation/example/benchmark dataset for a smoke run; every report flags it.', default: false}),
    data: Flags.file({summary: 'Train on your own Gym task JSONL (e.g. from `tasks export`) instead of a dataset of the Gym config.', exists: true, exclusive: ['dataset']}),
    'training-data': Flags.boolean({summary: "The --data file is training data even though it is one of the Gym checkout's example or benchmark files (otherwise such a file makes a smoke run).", dependsOn: ['data']}),
    'mix-cap': Flags.string({summary: "ENVIRONMENT=ROWS: with several environments and no --data, keep at most ROWS of that environment's gradable rows in the mix (default: all; Relax's multienv recipe keeps 2400 math rows).", multiple: true}),
    'mix-seed': Flags.integer({summary: 'Seed the mixed rows are shuffled with (default 20260829, that of Relax\'s multienv recipe; kept on --update).', min: 0, max: 4_294_967_295}),
    schedule: Flags.string({summary: "How actor and rollout share the job's GPUs: colocate (on-policy, the default) or hybrid (Relax's hybrid-async layout: half the GPUs each, --max-staleness 2, --num-iters-per-train-update 1).", options: [...SCHEDULE_MODES]}),
    'second-model': Flags.string({summary: 'Serve a judge or user simulator from a model server gymrecipe adds (ROLE or ROLE=TYPE, TYPE vllm_model or openai_model); its endpoint is set in env.sh.', multiple: true}),
    'policy-serves': Flags.string({summary: 'Accept the policy model — under Relax the model being trained — as the judge or user simulator a config names (refused otherwise).', options: ['judge', 'simulator'], multiple: true}),
    'config-root': Flags.string({summary: 'NAME=DIR: a tree outside the Gym checkout that holds your own configs and servers (e.g. RELAX_INTEGRATION_ROOT=~/my-env); --gym-config may then point into it. env.sh gets NAME, the start script mounts DIR read-only at the same path.', multiple: true}),
    'port-base': Flags.integer({summary: 'Gateway port; agent, resources and head take the next three, Ray the next hundred (default: a free block).', min: 1024, max: 65_535 - 99}),
    'gcs-port': Flags.integer({summary: "The private Ray's GCS port (default: kept on --update, else the next free one from 6381).", min: 1024, max: 65_535}),
    verifier: Flags.file({summary: 'YAML with verifier: (and trial:) blocks for an environment no built-in knows.', exists: true}),
    model: Flags.string({summary: 'Model directory name under MODEL_DIR, e.g. Qwen3-8B (with --model-slug and --model-config).'}),
    'model-slug': Flags.string({summary: 'Model slug used in the training script name, e.g. qwen3-8B.', dependsOn: ['model']}),
    'model-config': Flags.string({summary: 'Relax model config script in scripts/models, e.g. qwen3-8B.sh.', dependsOn: ['model']}),
    gpus: Flags.integer({summary: 'GPUs per training job (default: that of the base recipe).', min: 1}),
    force: Flags.boolean({summary: 'Overwrite files that were edited by hand.', default: false, exclusive: ['update']}),
    update: Flags.boolean({summary: 'Three-way merge: keep your edits, take what changed in the contract and templates.', default: false}),
    'dry-run': dryRunFlag,
    diff: Flags.boolean({summary: 'With --dry-run, print the diff of every changed file.', default: false}),
  }

  public async run(): Promise<NewRecipeResult> {
    const f = this.flags
    if (f.diff && !f['dry-run']) throw usageError('--diff only works with --dry-run', 'Run `gymrecipe new … --dry-run --diff` to see the changes, then again without both to write them.')
    const model = f.model ? {name: f.model, slug: f['model-slug'] ?? f.model.toLowerCase(), configScript: f['model-config'] ?? `${f.model.toLowerCase()}.sh`} : undefined
    const result = await newRecipe({
      id: this.args.recipe,
      gymRoot: f['gym-root'],
      gymConfigs: f['gym-config'] ?? [],
      relaxRoot: f['relax-root'],
      from: f.from,
      archetype: f.archetype as Archetype | undefined,
      agent: f.agent?.[0],
      moreAgents: f.agent && f.agent.length > 1 ? f.agent.slice(1) : undefined,
      dataset: f.dataset,
      dataFile: f.data,
      trainingData: f['training-data'],
      policyServes: f['policy-serves'],
      secondModels: f['second-model']?.map(parseSecondModelFlag),
      schedule: f.schedule as ScheduleMode | undefined,
      mixCaps: f['mix-cap'] ? parseMixCaps(f['mix-cap']) : undefined,
      mixSeed: f['mix-seed'],
      configRoots: (f['config-root'] ?? []).map(parseConfigRoot),
      smoke: f.smoke,
      portBase: f['port-base'],
      gcsPort: f['gcs-port'],
      verifierFile: f.verifier,
      model,
      gpus: f.gpus,
      force: f.force,
      update: f.update,
      env: process.env,
      dryRun: f['dry-run'],
      version: this.config.version,
    })
    this.report(result)
    const conflicted = result.files.some((file) => file.action === 'conflict')
    const conflicts = result.files.filter((file) => file.action === 'conflict').map((file) => file.name)
    return this.withExitCode(result, conflicted ? ExitCode.precondition : ExitCode.ok, {code: 'E_CONFLICT', message: `files changed by hand would be overwritten: ${conflicts.join(', ')}`, hint: 'Use --update to merge, or --force to overwrite.'})
  }

  private report(result: NewRecipeResult): void {
    this.say(`${result.dryRun ? 'Plan for' : 'Recipe'} ${result.recipe} in ${result.dir}`)
    for (const file of result.files) this.say(`  ${file.action.padEnd(9)} ${file.name}  (${file.reason})`)
    if (result.dryRun && this.flags.diff) for (const file of result.files) if (file.diff) this.say(file.diff)
    for (const note of result.notes) this.say(`note: ${note}`)
    if (result.verifierPending) this.warnLine(`verifier pending: ${result.verifierPending} Then: gymrecipe new ${result.recipe} --update --verifier <file.yaml>. Until then the service rung and \`gymrecipe train\` refuse; the other steps go on.`)
    const conflicts = result.files.filter((file) => file.action === 'conflict')
    const marked = conflicts.filter((file) => file.reason !== DELETED_AND_CHANGED).map((file) => file.name)
    const deleted = conflicts.filter((file) => file.reason === DELETED_AND_CHANGED).map((file) => file.name)
    this.say(`ports: ${serviceBlockPorts(result.contract).map((p) => `${p.label} ${p.port}`).join(', ')}; private Ray GCS ${result.contract.ray.gcs_port}`)
    if (this.flags.update && conflicts.length > 0) {
      const verb = result.dryRun ? 'would need' : 'needs'
      if (marked.length > 0) this.say(`${verb} you: resolve the conflict markers (<<<<<<< yours … >>>>>>> generated now) in ${marked.join(', ')}`)
      if (deleted.length > 0) this.say(`${verb} you: ${deleted.join(', ')} — deleted by you, changed by gymrecipe since (--dry-run --diff shows the change); restore or leave it deleted`)
      if (!result.dryRun) this.say(`next: then gymrecipe verify ${result.recipe} --level static --relax-root ${relaxRootWord(this.flags['relax-root'])}`)
      return
    }
    if (!result.dryRun) this.say(`next: gymrecipe verify ${result.recipe} --level static --relax-root ${relaxRootWord(this.flags['relax-root'])}`)
  }
}

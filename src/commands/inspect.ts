import path from 'node:path'
import {Flags} from '@oclif/core'

import {BaseCommand} from '../cli/base-command.js'
import {gymRootFlag} from '../cli/flags.js'
import {type GymGraph, loadGymGraph, redactSecrets} from '../contract/gym-config.js'
import {renderGraph} from '../contract/gym-config/render.js'
import {ExitCode} from '../errors.js'
import {shellWord} from '../shell-words.js'

export type InspectResult = GymGraph & {gymRoot: string}

export default class Inspect extends BaseCommand<typeof Inspect> {
  static override summary = 'Print the server graph of a NeMo Gym config'
  static override description = `Reads a NeMo Gym config the way Gym does: config_paths includes (resolved against the Gym root, merged in the order the checkout's own parser uses: at Relax's pin an included file overrides the file that includes it, in current Gym the including file wins; the order used, and any key it decides, are printed), OmegaConf merging (mappings merge, lists are replaced), _inherit_from, _copy, _delete_key and \${...} interpolation.
Prints resources servers, agents (type, resources_server and model_server references, max_steps, datasets with their HuggingFace/GitLab sources and licenses) and model servers, then any problems: dangling references, unset ??? values, malformed dataset entries.
Every name comes from the YAML keys, never from directory names. --gym-config may be repeated: configs merge left to right, like gym env start --config a --config b.
Secrets (api keys, tokens) are redacted from the output.

EXIT STATUS
  0  the graph was read (warnings allowed)
  1  the graph was read but has errors (e.g. an agent references a resources server that does not exist)
  2  bad input: missing file, invalid YAML, a path outside the Gym root, an include or inherit cycle, a malformed server block`

  static override examples = [
    '<%= config.bin %> inspect --gym-root ~/src/Gym --gym-config environments/calendar/config.yaml',
    '<%= config.bin %> inspect --gym-root ~/src/Gym --gym-config benchmarks/gsm8k/config.yaml --json',
    '<%= config.bin %> inspect --gym-root ~/src/Gym --gym-config resources_servers/calendar/configs/calendar.yaml --gym-config responses_api_models/vllm_model/configs/vllm_model.yaml',
    'GYMRECIPE_GYM_ROOT=~/src/Gym <%= config.bin %> inspect --gym-config environments/workplace_assistant/config.yaml',
  ]

  static override flags = {
    'gym-root': gymRootFlag,
    'gym-config': Flags.string({
      summary: 'Config file relative to the Gym root. Repeat to merge several, left to right.',
      multiple: true,
      multipleNonGreedy: true,
      required: true,
    }),
  }

  public async run(): Promise<InspectResult> {
    const gymRoot = this.flags['gym-root']
    const graph = redactSecrets(await loadGymGraph(gymRoot, this.flags['gym-config']))
    for (const line of renderGraph(graph, gymRoot)) this.say(line)
    const hasErrors = graph.problems.some((problem) => problem.severity === 'error')
    if (!hasErrors) {
      const configs = this.flags['gym-config'].map((c) => `--gym-config ${shellWord(c)}`).join(' ')
      this.say(`next: gymrecipe new <recipe-id> --gym-root ${shellWord(path.resolve(gymRoot))} ${configs} --relax-root <your Relax checkout>`)
    }
    const firstError = graph.problems.find((problem) => problem.severity === 'error')
    return this.withExitCode({gymRoot, ...graph}, hasErrors ? ExitCode.failure : ExitCode.ok, firstError && {code: 'E_GYM_GRAPH', message: `${firstError.file ? `${firstError.file}${firstError.line ? `:${firstError.line}` : ''}: ` : ''}${firstError.message}`})
  }
}

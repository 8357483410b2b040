/**
 * The policy model as Relax's start line defines it: `gym env start` loads Relax's
 * `relax_gateway_model.yaml` before the environment's configs, so `policy_model` is the Relax
 * Gateway — the model being trained. A config that copies or inherits `policy_model` (a simulator,
 * a judge, a policy variant) copies the Gateway. The image build copies this file into the Gym
 * checkout; a checkout that already holds it is read as it is.
 */
import path from 'node:path'

import type {GymConfigFs} from './paths.js'

export const RELAX_POLICY_MODEL_CONFIG = 'responses_api_models/relax_gateway_model/configs/relax_gateway_model.yaml'
export const RELAX_GATEWAY_MODEL = 'relax_gateway_model'

/** The same text as Relax's examples/nemo_gym_agentic/service/nemo_gym_gateway_model/configs/relax_gateway_model.yaml. */
const RELAX_POLICY_MODEL_TEXT = `policy_model:
  responses_api_models:
    relax_gateway_model:
      entrypoint: app.py
      num_workers: 1
`

/** A file system in which the Gym root holds Relax's policy model config, as the service image does. */
export function withRelaxPolicyModel(fs: GymConfigFs, rootReal: string): GymConfigFs {
  const file = path.join(rootReal, RELAX_POLICY_MODEL_CONFIG)
  return {
    readText: async (absPath) => (absPath === file ? ((await fs.readText(absPath).catch(() => undefined)) ?? RELAX_POLICY_MODEL_TEXT) : fs.readText(absPath)),
    realpath: async (absPath) => (absPath === file ? fs.realpath(absPath).catch(() => absPath) : fs.realpath(absPath)),
    isDirectory: (absPath) => fs.isDirectory(absPath),
  }
}

/** The config paths of the start line: Relax's policy model first. */
export function withRelaxPolicyConfig(configPaths: string[]): string[] {
  return [RELAX_POLICY_MODEL_CONFIG, ...configPaths.filter((p) => p !== RELAX_POLICY_MODEL_CONFIG)]
}

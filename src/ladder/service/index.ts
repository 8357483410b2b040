import type {RungDefinition} from '../types.js'
import {containerCheck, environmentVerifiersCheck, gymTreeCheck, privateRayCheck, readyzCheck, tracebackCheck, verifierCheck} from './checks.js'

/** Service rung: the running Gym service, checked through the Docker Engine API and HTTP. */
export const serviceRung: RungDefinition = {
  rung: 'service',
  summary: 'the Gym service runs the pinned commit from a fresh image, and its verifier tells a right answer from a wrong one',
  inputs: ['files', 'imageId', 'serviceEpoch'],
  next: (recipe, relaxRoot) => `gymrecipe verify ${recipe} --level trial --relax-root ${relaxRoot}`,
  checks: (ctx) => [containerCheck, readyzCheck, gymTreeCheck, verifierCheck, ...((ctx.target.contract?.gym.additional_environments?.length ?? 0) > 0 ? [environmentVerifiersCheck] : []), tracebackCheck, privateRayCheck],
}

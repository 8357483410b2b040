import type {RungDefinition} from '../types.js'
import {containerCheck, environmentVerifiersCheck, gymTreeCheck, privateRayCheck, readyzCheck, tracebackCheck, verifierCheck} from './checks.js'

/** Service rung: the running Gym service, checked through the Docker Engine API and HTTP. */
export const serviceRung: RungDefinition = {
  rung: 'service',
  checks: (ctx) => [containerCheck, readyzCheck, gymTreeCheck, verifierCheck, ...((ctx.target.contract?.gym.additional_environments?.length ?? 0) > 0 ? [environmentVerifiersCheck] : []), tracebackCheck, privateRayCheck],
}

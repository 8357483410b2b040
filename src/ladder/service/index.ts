import type {RungDefinition} from '../types.js'
import {containerCheck, gymTreeCheck, privateRayCheck, readyzCheck, tracebackCheck, verifierCheck} from './checks.js'

/** Service rung: the running Gym service, checked through the Docker Engine API and HTTP. */
export const serviceRung: RungDefinition = {
  rung: 'service',
  checks: () => [containerCheck, readyzCheck, gymTreeCheck, verifierCheck, tracebackCheck, privateRayCheck],
}

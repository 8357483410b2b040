import {serviceRung} from './service/index.js'
import {dataRung} from './data/index.js'
import {networkRung} from './network/index.js'
import {staticRung} from './static/index.js'
import {trainingRung} from './training/index.js'
import {trialRung} from './trial/index.js'
import type {RungDefinition} from './types.js'

/** Every rung gymrecipe can climb, in ladder order. */
export const RUNG_DEFINITIONS: RungDefinition[] = [staticRung, dataRung, serviceRung, networkRung, trialRung, trainingRung]

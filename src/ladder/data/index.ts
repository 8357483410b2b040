import type {RungDefinition} from '../types.js'
import {environmentRows} from './checks-environments.js'
import {conversion, jsonRows, rowCount, verifierFields} from './checks-rows.js'
import {notConverted, sourcePath, splitGuard} from './checks-source.js'
import {sharedStorage} from './checks-storage.js'
import {enoughRows} from './checks-volume.js'

/**
 * The data rung: the raw Gym JSONL that NEMO_GYM_SOURCE_DATA names is right for training.
 * Row-level checks share one streaming pass over the file.
 */
export const dataRung: RungDefinition = {
  rung: 'data',
  summary: 'the raw data on shared storage is training data every row of which the converter keeps and the grader can read',
  inputs: ['files', 'data'],
  next: (recipe, relaxRoot) => `gymrecipe start ${recipe} --relax-root ${relaxRoot}`,
  checks: () => [sourcePath, notConverted, splitGuard, jsonRows, verifierFields, environmentRows, rowCount, enoughRows, conversion, sharedStorage],
}

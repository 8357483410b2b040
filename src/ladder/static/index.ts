import type {RungDefinition} from '../types.js'
import {filesPresent, graphNames} from './checks-files.js'
import {
  contextBudgets,
  dataLimitIsRowCount,
  envDeploymentOnly,
  hyperparametersFixed,
  modelConfigExists,
  noDelegation,
  noWaitOnlyWhenAsked,
  noWorkingDir,
  prepareGuardsSourcePath,
  rawSourceData,
  samplesPerPrompt,
  startChecksOwnership,
  startIsolatesRay,
  submitsLast,
  trainingArrays,
  trialTiming,
} from './checks-scripts.js'
import {bashSyntax, pyCompile, shellcheck} from './checks-tools.js'

export const staticRung: RungDefinition = {
  rung: 'static',
  checks: () => [
    filesPresent,
    graphNames,
    bashSyntax,
    shellcheck,
    pyCompile,
    envDeploymentOnly,
    trainingArrays,
    hyperparametersFixed,
    submitsLast,
    noWaitOnlyWhenAsked,
    noDelegation,
    rawSourceData,
    dataLimitIsRowCount,
    modelConfigExists,
    noWorkingDir,
    samplesPerPrompt,
    contextBudgets,
    trialTiming,
    prepareGuardsSourcePath,
    startIsolatesRay,
    startChecksOwnership,
  ],
}

import type {RungDefinition} from '../types.js'
import {filesPresent, graphNames} from './checks-files.js'
import {envDeploymentOnly} from './checks-env.js'
import {startChecksOwnership, startIsolatesRay} from './checks-launchers.js'
import {prepareGuardsSourcePath} from './checks-prepare.js'
import {
  contextBudgets,
  dataLimitIsRowCount,
  hyperparametersFixed,
  modelConfigExists,
  noDelegation,
  noWaitOnlyWhenAsked,
  noWorkingDir,
  rawSourceData,
  samplesPerPrompt,
  submitsLast,
  trainingArrays,
  trialTiming,
} from './checks-run.js'
import {bashSyntax, pyCompile, shellcheck} from './checks-tools.js'

export const staticRung: RungDefinition = {
  rung: 'static',
  summary: 'the recipe files are complete, consistent with the contract and the Gym config, and every script parses and lints clean',
  inputs: ['files'],
  next: (recipe, relaxRoot) => `gymrecipe prepare ${recipe} --relax-root ${relaxRoot}`,
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

/**
 * The ladder's one door: what steps, commands and the CLI use of it. Nothing outside src/ladder
 * imports a rung's insides (the lint refuses it); a climb's context is built here, once.
 */
export {RUNGS, type CheckContext, type CheckResult, type LadderOptions, type LadderReport, type Rung, type RungReport, type StepHandoff, type TrainingRungOptions, type TrialRungOptions} from './types.js'
export {RUNG_DEFINITIONS} from './rungs.js'
export {checkContext} from './context.js'
export {type LadderPrinter, runLadder, runRung} from './runner.js'
export {verifyRecipe, type VerifyOptions} from './verify.js'
export {checkLines} from './render.js'
export {ladderStanding, type RungStanding} from './state.js'
export {scriptEnv} from './scratch.js'
export {dataPlan, previewPathOf} from './data/source.js'
export {describeService, type ServiceDescription} from './service/describe.js'
export {newestTrainingLog, saveDirOf, trainingRung} from './training/index.js'
export {LogDigest} from './training/outputs.js'
export {recipeFiles} from './static/recipe-files.js'
export {configPathsOf, graphOverrides} from './static/checks-files.js'
export {expectedRawFilename} from './static/checks-prepare.js'

export {run} from '@oclif/core'
export * from './errors.js'

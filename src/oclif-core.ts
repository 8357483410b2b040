/**
 * The one copy of oclif the CLI runs on: bin/run.js starts it from here, and the build's command
 * bundles carry it in the chunk they share with this module, so the CLI and its commands agree
 * on one set of classes.
 */
export {execute} from '@oclif/core'

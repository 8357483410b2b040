/**
 * The one copy of oclif the CLI runs on: bin/run.js starts it from here. As compiled, this module
 * passes @oclif/core through; the build's bundle step (scripts/bundle.mjs) replaces it with one
 * that loads oclif's own bundle with its code cache, and the command bundles import that one
 * (`#oclif-core`), so the CLI and its commands agree on one set of classes either way.
 */
export {execute} from '@oclif/core'

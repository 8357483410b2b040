/**
 * A recipe folder as it is on disk: where it is, its contract if it has one, and its files by
 * role and by kind. The ladder, the steps and adopt all read recipes through this floor.
 */
import type {RecipeContract, RecipeFileNames} from '../contract/types.js'

/** Where a recipe lives and what is known about it before any rung runs. */
export interface RecipeTarget {
  id: string
  relaxRoot: string
  dir: string
  /** The recorded contract, when recipe.yaml exists (hand-written recipes may have none). */
  contract: RecipeContract | null
  /** Paths of the seven files inside dir (resolved from the contract, or discovered). */
  files: Partial<RecipeFileNames>
  /** Every script in dir by kind: hand-written recipes may have several of each. */
  layout: RecipeLayout
}

/**
 * Relax lays recipes out freely: two training scripts, one without a recipe suffix, an
 * in-container launcher beside a host-side `_remote.sh` or an attaching `_local.sh`, a trial
 * verifier beside the direct one. Every file of a kind is checked.
 */
export interface RecipeLayout {
  /** run-*.sh */
  training: string[]
  /** start_*.sh and submit_*.sh */
  launchers: string[]
  /** prepare_*.sh */
  prepare: string[]
  /** verify_*.py */
  verifiers: string[]
  /** Every *.sh in the folder. */
  shell: string[]
}

/** What adopt is asked and what it answers; the draft file it leaves for values it cannot read. */

export const DRAFT_FILE = 'recipe.adopt.yaml'
/** What the draft holds where a value is missing; anything else (null included) is the user's answer. */
export const TO_FILL = '<fill in>'

export interface AdoptOptions {
  relaxRoot: string
  recipe: string
  gymRoot?: string
  /** Fill what cannot be read from this built-in; every such value is listed. */
  fillFrom?: string
  force: boolean
  dryRun: boolean
  env: NodeJS.ProcessEnv
}

export interface AdoptedField {
  /** JSON pointer into recipe.yaml. */
  pointer: string
  from: string
}

export interface AdoptResult {
  recipe: string
  dir: string
  /** recipe.yaml when everything is known; else the draft to fill. */
  file: string
  complete: boolean
  dryRun: boolean
  read: AdoptedField[]
  /** Values you gave in the draft, or taken from --fill-from. */
  filled: AdoptedField[]
  unfilled: Array<{pointer: string; why: string}>
  notes: string[]
  /** What would be recorded: the values read and filled, "<fill in>" where one is missing. */
  contract: Record<string, unknown>
}

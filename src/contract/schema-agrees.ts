/**
 * recipe.yaml's TypeScript type and its JSON Schema are written once each; the compiler checks
 * that they describe the same documents: a field added to one and not the other fails the build.
 */
import type {FromSchema} from 'json-schema-to-ts'

import type {recipeSchema} from './schema.js'
import type {RecipeContract} from './types.js'

/** What the schema admits, as a type. */
export type SchemaContract = FromSchema<typeof recipeSchema>

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
export const SCHEMA_AGREES_WITH_TYPES: Same<SchemaContract, RecipeContract> = true

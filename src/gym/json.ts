/**
 * Lossless JSON and JSONL for Gym data, by concern:
 * - json-values.ts: the values (numbers as their source text) and the number rules;
 * - json-members.ts: an object line validated and split into its members' exact text in one pass;
 * - json-errors.ts: errors that name the file, line and field;
 * - jsonl-files.ts: JSONL files read line by line and written atomically.
 */
export {isLosslessNumber, LosslessNumber} from 'lossless-json'
export * from './json-errors.js'
export * from './json-members.js'
export * from './json-values.js'
export * from './jsonl-files.js'

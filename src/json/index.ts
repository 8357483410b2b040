/**
 * Lossless JSON and JSONL with the one input policy, for every layer above (the Gym library, the
 * ladder, the CLI), by concern:
 * - values.ts: the values (numbers as their source text), the number rules, fast parsing;
 * - text-scan.ts: an object line validated and split into its members' exact text in one pass;
 * - byte-scan.ts: the same for UTF-8 bytes, without decoding (hot paths);
 * - chars.ts: the one character table every scanner reads;
 * - input-policy.ts: what every reader accepts (nesting, line length, non-finite floats);
 * - errors.ts: errors that name the file, line and field;
 * - jsonl-files.ts, jsonl-reader.ts: JSONL files read line by line and written atomically.
 */
export {isLosslessNumber, LosslessNumber} from 'lossless-json'
export * from './errors.js'
export * from './text-scan.js'
export * from './values.js'
export * from './jsonl-files.js'

/** JSONL files the examples read and write whole (they are small). */
import {readFileSync, renameSync, writeFileSync} from 'node:fs'

export function readJsonl(file: string): any[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line))
}

/** Write through a temporary sibling, so a failed run never leaves half a file. */
export function writeJsonl(file: string, rows: unknown[]): void {
  const temporary = `${file}.${process.pid}.tmp`
  writeFileSync(temporary, rows.map((row) => `${JSON.stringify(row)}\n`).join(''))
  renameSync(temporary, file)
}

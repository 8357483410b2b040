/**
 * PITFAIL.md entries: one numbered line each, `N. **Symptom.** → Cause. → Fix.`, the house form
 * of the generated entries. The user's entries go in the recorded region (regions.ts), which
 * regeneration keeps; numbers continue after the highest number anywhere in the file.
 */
import {beginMarker, endMarker, regionBody, REGIONS, withRegionBody} from './regions.js'

export interface PitfallEntry {
  symptom: string
  cause: string
  fix: string
}

export interface RecordedEntry {
  number: number
  symptom: string
  line: number
}

/** At most this many characters per part: an entry is read at a glance, not studied. */
export const MAX_PART_LENGTH = 300

/** Numbered entries of the file: `N. **Symptom** …` list items and `### N. Symptom` headings. */
export function entriesOf(text: string): RecordedEntry[] {
  const out: RecordedEntry[] = []
  text.split('\n').forEach((line, index) => {
    const item = line.match(/^\s*(\d+)[.)]\s+\*\*(.+?)\*\*/) ?? line.match(/^#{2,6}\s*(\d+)[.)]\s+(.+?)\s*$/)
    if (item) out.push({number: Number(item[1]), symptom: item[2], line: index + 1})
  })
  return out
}

/** A symptom as compared for duplicates: case, markup, punctuation and spacing do not count. */
export function symptomKey(symptom: string): string {
  return symptom
    .toLowerCase()
    .replace(/[`*_]/g, '')
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim()
}

/** What is wrong with one part of an entry, or undefined when it can be written as it is. */
export function partProblem(name: keyof PitfallEntry, value: string): string | undefined {
  const v = value.trim()
  if (!v) return `the ${name} is empty`
  if (/[\r\n]/.test(v)) return `the ${name} must be one line`
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x08\x0b-\x1f\x7f]/.test(v)) return `the ${name} holds a control character (an escape sequence would act on every terminal that shows PITFAIL.md)`
  if (v.length > MAX_PART_LENGTH) return `the ${name} is ${v.length} characters; keep it under ${MAX_PART_LENGTH}`
  // A comment marker would cut the recorded region open and lose the entries after it.
  if (/<!--|-->/.test(v)) return `the ${name} contains an HTML comment marker (<!-- or -->)`
  return undefined
}

function sentence(text: string): string {
  const t = text.trim()
  return /[.!?。)`]$/.test(t) ? t : `${t}.`
}

export function entryLine(number: number, entry: PitfallEntry): string {
  return `${number}. **${sentence(entry.symptom).replaceAll('**', '')}** → ${sentence(entry.cause)} → ${sentence(entry.fix)}`
}

export function recordedRegionSection(recipe: string): string {
  return `## Recorded in this recipe\n\n${beginMarker(REGIONS.recordedPitfalls, `added with \`gymrecipe pitfall add ${recipe}\`; regeneration keeps them`)}\n${endMarker(REGIONS.recordedPitfalls)}\n`
}

/** The file with the entry appended to its recorded region (added at the end when the file has none). */
export function appendEntry(text: string, recipe: string, line: string): string {
  let out = text
  if (regionBody(out, REGIONS.recordedPitfalls) === undefined) out = `${out.replace(/\n*$/, '')}\n\n${recordedRegionSection(recipe)}`
  const body = regionBody(out, REGIONS.recordedPitfalls) ?? ''
  return withRegionBody(out, REGIONS.recordedPitfalls, `${body}${line}\n`)
}

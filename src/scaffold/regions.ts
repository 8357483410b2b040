/**
 * Regions of a generated Markdown file that belong to the user, not the template: the hand-off
 * section of README.md and the recorded entries of PITFAIL.md. Regeneration carries each region
 * over from the file on disk, and a file's recorded hash ignores what is inside them, so writing
 * into a region never makes the file look "edited by hand".
 */
import {ExitCode, GymError} from '../errors.js'

export const REGIONS = {
  handoff: 'handoff',
  recordedPitfalls: 'recorded-pitfalls',
} as const

export type RegionName = (typeof REGIONS)[keyof typeof REGIONS]

const NAMES: RegionName[] = Object.values(REGIONS)

function markers(name: RegionName): {begin: RegExp; end: RegExp} {
  return {begin: new RegExp(`^<!-- gymrecipe:${name}:begin\\b.*-->\\s*$`, 'm'), end: new RegExp(`^<!-- gymrecipe:${name}:end -->\\s*$`, 'm')}
}

export function beginMarker(name: RegionName, note: string): string {
  return `<!-- gymrecipe:${name}:begin (${note}) -->`
}

export function endMarker(name: RegionName): string {
  return `<!-- gymrecipe:${name}:end -->`
}

interface Span {
  /** Offset just after the begin marker's line break. */
  bodyStart: number
  /** Offset of the end marker. */
  bodyEnd: number
}

function spanOf(text: string, name: RegionName): Span | undefined {
  const {begin, end} = markers(name)
  // Markers are trusted only where gymrecipe wrote them: one pair. A second one (copied in by
  // hand, or pasted into a value) would make any choice cut the file.
  const count = (pattern: RegExp) => text.match(new RegExp(pattern.source, 'gm'))?.length ?? 0
  const begins = count(begin)
  const ends = count(end)
  if (begins > 1 || ends > 1) {
    throw new GymError(`the file holds ${begins} gymrecipe:${name}:begin and ${ends} gymrecipe:${name}:end markers; gymrecipe writes one pair and will not guess which`, {
      code: 'E_REGION_AMBIGUOUS',
      exit: ExitCode.precondition,
      hint: `Keep one <!-- gymrecipe:${name}:begin … --> line and one <!-- gymrecipe:${name}:end --> line (the ones around the section gymrecipe maintains), then rerun.`,
    })
  }
  const b = begin.exec(text)
  if (!b) return undefined
  const afterBegin = b.index + b[0].length
  const bodyStart = text[afterBegin] === '\n' ? afterBegin + 1 : afterBegin
  const rest = text.slice(bodyStart)
  const e = end.exec(rest)
  if (!e) return undefined
  return {bodyStart, bodyEnd: bodyStart + e.index}
}

/** The text between a region's markers, or undefined when the file has no such region. */
export function regionBody(text: string, name: RegionName): string | undefined {
  const span = spanOf(text, name)
  return span ? text.slice(span.bodyStart, span.bodyEnd) : undefined
}

/** The text with a region's body replaced (the region must exist). */
export function withRegionBody(text: string, name: RegionName, body: string): string {
  const span = spanOf(text, name)
  if (!span) throw new Error(`no ${name} region`)
  const normalized = body === '' || body.endsWith('\n') ? body : `${body}\n`
  return text.slice(0, span.bodyStart) + normalized + text.slice(span.bodyEnd)
}

/** Every region emptied: what a file's recorded hash is computed over. */
export function withoutRegionBodies(text: string): string {
  let out = text
  for (const name of NAMES) if (spanOf(out, name)) out = withRegionBody(out, name, '')
  return out
}

/** The freshly rendered text with every region's body taken over from the file on disk. */
export function carryRegions(onDisk: string, rendered: string): string {
  let out = rendered
  for (const name of NAMES) {
    const kept = regionBody(onDisk, name)
    if (kept !== undefined && spanOf(out, name)) out = withRegionBody(out, name, kept)
  }
  return out
}

/**
 * A value made safe to render into a Markdown file with regions: an HTML comment opener or
 * closer in it is written as an entity, so it can never become (or end) a marker.
 */
export function inertInMarkdown(value: string): string {
  return value.replaceAll('<!--', '&lt;!--').replaceAll('-->', '--&gt;')
}

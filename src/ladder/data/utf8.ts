import {isUtf8} from 'node:buffer'

/**
 * Streaming UTF-8 validation for the JSONL scanner. Each chunk is validated natively
 * (`buffer.isUtf8`, SIMD) and only a failing chunk is walked byte by byte to find where.
 * A character cut by a chunk boundary is carried (at most 3 bytes) into the next chunk.
 */
export class Utf8Validator {
  private tail = new Uint8Array(4)
  private tailLength = 0
  /** Absolute offset of the first carried byte. */
  private tailOffset = 0

  /**
   * Validate `chunk`, which starts at absolute file offset `offset`. Returns the absolute
   * offsets of invalid bytes, at most one per line (enough to report the line), in order.
   */
  push(chunk: Uint8Array, offset: number): number[] {
    const bad: number[] = []
    let start = 0
    if (this.tailLength > 0) start = this.completeTail(chunk, bad)
    const cut = incompleteTailStart(chunk, start)
    if (cut > start && !isUtf8(chunk.subarray(start, cut))) locateInvalid(chunk, start, cut, offset, bad)
    if (cut < chunk.length) {
      this.tail.set(chunk.subarray(cut), 0)
      this.tailLength = chunk.length - cut
      this.tailOffset = offset + cut
    }
    return bad
  }

  /** End of input: a carried partial character is invalid. */
  end(): number[] {
    const bad = this.tailLength > 0 ? [this.tailOffset] : []
    this.tailLength = 0
    return bad
  }

  /** Finish the character carried from the previous chunk; returns where the rest of the chunk starts. */
  private completeTail(chunk: Uint8Array, bad: number[]): number {
    const need = sequenceLength(this.tail[0]) - this.tailLength
    const take = Math.min(Math.max(need, 0), chunk.length)
    const joined = new Uint8Array(this.tailLength + take)
    joined.set(this.tail.subarray(0, this.tailLength), 0)
    joined.set(chunk.subarray(0, take), this.tailLength)
    this.tailLength = 0
    if (take < need) {
      // The chunk is shorter than the rest of the character: carry everything again.
      this.tail.set(joined, 0)
      this.tailLength = joined.length
      return chunk.length
    }
    if (isUtf8(joined)) return take
    // Invalid: report it and validate the whole chunk again, so no byte after it goes unchecked.
    bad.push(this.tailOffset)
    return 0
  }
}

/** Bytes a sequence starting with `lead` should have (1 for anything that is not a valid lead byte). */
function sequenceLength(lead: number): number {
  if (lead >= 0xf0 && lead <= 0xf4) return 4
  if (lead >= 0xe0) return lead <= 0xef ? 3 : 1
  if (lead >= 0xc2) return 2
  return 1
}

/** Where a character cut by the end of the chunk starts (chunk.length when none is cut). */
function incompleteTailStart(chunk: Uint8Array, from: number): number {
  const end = chunk.length
  for (let i = end - 1; i >= Math.max(from, end - 3); i--) {
    const byte = chunk[i]
    if ((byte & 0xc0) === 0x80) continue // continuation byte: keep looking for its lead
    return byte >= 0xc0 && i + sequenceLength(byte) > end ? i : end
  }
  return end
}

/** Record the first invalid byte of each line in chunk[start, end). Rare path: only runs on a failing chunk. */
function locateInvalid(chunk: Uint8Array, start: number, end: number, offset: number, bad: number[]): void {
  let i = start
  while (i < end) {
    const length = validSequenceAt(chunk, i, end)
    if (length > 0) {
      i += length
      continue
    }
    bad.push(offset + i)
    const newline = chunk.indexOf(0x0a, i)
    if (newline === -1 || newline >= end) return
    i = newline + 1
  }
}

/** Length of the valid UTF-8 sequence at i, or 0 when the bytes there are invalid (RFC 3629). */
export function validSequenceAt(bytes: Uint8Array, i: number, end: number): number {
  const b0 = bytes[i]
  if (b0 < 0x80) return 1
  const length = sequenceLength(b0)
  if (length === 1 || i + length > end) return 0
  const b1 = bytes[i + 1]
  // Second-byte ranges exclude overlong forms, surrogates and code points above U+10FFFF.
  const low = b0 === 0xe0 ? 0xa0 : b0 === 0xf0 ? 0x90 : 0x80
  const high = b0 === 0xed ? 0x9f : b0 === 0xf4 ? 0x8f : 0xbf
  if (b1 < low || b1 > high) return 0
  for (let k = 2; k < length; k++) if ((bytes[i + k] & 0xc0) !== 0x80) return 0
  return length
}

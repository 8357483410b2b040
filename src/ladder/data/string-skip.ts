import {contentHash, generatedModule} from '../../precompiled.js'
import {STRING_SKIP_WAT} from './string-skip-wat.js'

/**
 * The WebAssembly string skipper (string-skip-wat.ts) and the buffers it reads: the scanner's
 * chunks are read straight into its memory, so skipping a string body is one call with no copy.
 */
export interface StringSkipper {
  /** The skipper's memory; a chunk that is a view of it can be skipped by `skip`. */
  readonly memory: ArrayBuffer
  /** Buffers in that memory for the reader to fill, `size` bytes each. */
  readonly buffers: Buffer[]
  /** Index (in memory) of the first byte in [i, end) that ends a string body's plain run and is not a complete valid escape, or end. */
  readonly skip: (i: number, end: number) => number
}

let built: WebAssembly.Module | null | undefined

/**
 * The skipper the build assembled, or undefined: when running from sources, when the build was
 * made from another version of the text, or when this engine cannot compile it (no SIMD).
 */
export function builtStringSkipper(): WebAssembly.Module | undefined {
  if (built === undefined) {
    built = null
    const generated = generatedModule('string-skip') as {sourceHash?: unknown; wasm?: unknown} | undefined
    if (generated && generated.sourceHash === contentHash(STRING_SKIP_WAT) && typeof generated.wasm === 'string') {
      try {
        built = new WebAssembly.Module(Buffer.from(generated.wasm, 'base64'))
      } catch {
        built = null // the scanner's JavaScript path does the same work
      }
    }
  }
  return built ?? undefined
}

/** A skipper of its own (one per scan: its memory holds that scan's buffers) with `count` buffers of `size` bytes. */
export function newStringSkipper(module: WebAssembly.Module, count: number, size: number): StringSkipper {
  const instance = new WebAssembly.Instance(module)
  const memory = instance.exports.memory as WebAssembly.Memory
  const pages = Math.ceil((count * size) / 65536) - memory.buffer.byteLength / 65536
  // grown once, before any view exists (growing detaches the views of the old size)
  if (pages > 0) memory.grow(pages)
  const buffer = memory.buffer
  return {
    memory: buffer,
    buffers: Array.from({length: count}, (_, k) => Buffer.from(buffer, k * size, size)),
    skip: instance.exports.skipStringBody as (i: number, end: number) => number,
  }
}

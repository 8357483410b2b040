/** The data rung's string skipper assembled from its WebAssembly text, as the build does (the source tree has no build output). */
import wabtInit from 'wabt'

import {STRING_SKIP_WAT} from '../../src/ladder/data/string-skip-wat.js'

let assembled: Promise<WebAssembly.Module> | undefined

export function assembledStringSkipper(): Promise<WebAssembly.Module> {
  assembled ??= wabtInit().then((wabt) => {
    const wat = wabt.parseWat('string-skip.wat', STRING_SKIP_WAT, {simd: true})
    try {
      wat.validate()
      return new WebAssembly.Module(wat.toBinary({}).buffer)
    } finally {
      wat.destroy()
    }
  })
  return assembled
}

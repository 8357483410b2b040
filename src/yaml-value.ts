import type {Document, ToJSOptions} from 'yaml'

import {ExitCode, GymError, messageOf} from './errors.js'

/**
 * A parsed YAML document as plain values. An alias that expands too far (a "billion laughs"
 * document) is bad input naming the file, not a crash: the yaml library throws a ReferenceError.
 */
export function yamlValue(doc: Document, file: string, options: ToJSOptions = {}): unknown {
  const maxAliasCount = options.maxAliasCount ?? 100
  try {
    return doc.toJS({...options, maxAliasCount})
  } catch (error) {
    if (error instanceof ReferenceError || /alias/i.test(String(messageOf(error)))) {
      throw new GymError(`YAML aliases expand too far (${String(messageOf(error)).split('\n')[0]}; the limit is ${maxAliasCount} alias expansions)`, {
        code: 'E_YAML_ALIASES',
        exit: ExitCode.usage,
        hint: 'Write the repeated values out, or use fewer nested aliases.',
        location: {file},
      })
    }
    throw error
  }
}

import {type Document, type DocumentOptions, isScalar, type LineCounter, type ParseOptions, parseDocument, type SchemaOptions, type ToJSOptions, visit, YAMLParseError} from 'yaml'

import {ExitCode, GymError, messageOf} from './errors.js'

/**
 * A parsed YAML document as plain values. An alias that expands too far (a "billion laughs"
 * document) is bad input naming the file, not a crash: the yaml library throws a ReferenceError.
 */
export function yamlValue(doc: Document, file: string, options: ToJSOptions = {}): unknown {
  const maxAliasCount = options.maxAliasCount ?? 100
  try {
    const value: unknown = doc.toJS({...options, maxAliasCount})
    // An alias inside the node its anchor names makes a value that contains itself.
    if (containsItself(value)) throw new RangeError('Maximum call stack size exceeded')
    return value
  } catch (error) {
    if (error instanceof RangeError) {
      throw new GymError('YAML aliases form a cycle (an alias inside the node its anchor names) or nest too deep to read', {
        code: 'E_YAML_ALIASES',
        exit: ExitCode.usage,
        hint: 'Remove the alias that refers to its own anchor, or write the values out.',
        location: {file},
      })
    }
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

/** Whether a value parsed from YAML contains itself (depth-first, each shared node walked once). */
function containsItself(root: unknown): boolean {
  const done = new Set<object>()
  const onPath = new Set<object>()
  const stack: Array<{node: object; children: unknown[]; next: number}> = []
  const enter = (node: unknown): boolean => {
    if (typeof node !== 'object' || node === null || done.has(node)) return false
    if (onPath.has(node)) return true
    onPath.add(node)
    const children = Array.isArray(node) ? node : node instanceof Map ? [...node.values()] : Object.values(node)
    stack.push({node, children, next: 0})
    return false
  }
  if (enter(root)) return true
  while (stack.length > 0) {
    const top = stack[stack.length - 1]
    if (top.next < top.children.length) {
      if (enter(top.children[top.next++])) return true
    } else {
      stack.pop()
      onPath.delete(top.node)
      done.add(top.node)
    }
  }
  return false
}

/**
 * parseDocument with duplicate keys found in linear time. The yaml library compares each new key
 * with every earlier key of its mapping, which makes a config with 100k keys take minutes; here
 * the library's check is off and one set per mapping does it, reporting the same
 * "Map keys must be unique" error at the repeated key.
 */
export function parseYamlDocument(text: string, options: ParseOptions & DocumentOptions & SchemaOptions & {lineCounter?: LineCounter} = {}): Document.Parsed {
  const document = parseDocument(text, {...options, uniqueKeys: false})
  if (options.uniqueKeys === false) return document
  const duplicates: YAMLParseError[] = []
  visit(document, {
    Map(_, map) {
      const seen = new Set<unknown>()
      for (const pair of map.items) {
        if (!isScalar(pair.key)) continue
        const key = pair.key.value
        if (seen.has(key)) {
          const start = pair.key.range?.[0] ?? 0
          const error = new YAMLParseError([start, start + 1], 'DUPLICATE_KEY', 'Map keys must be unique')
          if (options.lineCounter) error.linePos = [options.lineCounter.linePos(start)]
          duplicates.push(error)
        } else {
          seen.add(key)
        }
      }
    },
  })
  if (duplicates.length > 0) {
    document.errors.push(...duplicates)
    document.errors.sort((a, b) => a.pos[0] - b.pos[0])
  }
  return document
}

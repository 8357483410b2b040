import {type Document, isMap, isScalar, isSeq, LineCounter, type Node, type Tags} from 'yaml'

import {gymConfigError} from './errors.js'
import {isMapping, type Mapping, MISSING, type Path, toPointer} from './tree.js'
import {parseYamlDocument, yamlValue} from '../../yaml-value.js'

export interface ParsedConfigFile {
  /** Path relative to the Gym root, POSIX separators. */
  file: string
  data: Mapping
  /** JSON pointer of every key and list item -> the 1-based line it is written on. */
  lines: Map<string, number>
  /** Pointers whose value is written as `???`: such a value never overrides one set earlier. */
  missing: Set<string>
}

const PYYAML_TRUE = /^(?:[Yy]es|YES|[Tt]rue|TRUE|[Oo]n|ON)$/
const PYYAML_FALSE = /^(?:[Nn]o|NO|[Ff]alse|FALSE|[Oo]ff|OFF)$/

/**
 * Gym loads configs with OmegaConf, i.e. PyYAML's YAML 1.1 resolvers minus timestamps.
 * yaml's 1.1 schema is close, but also reads `y`/`n` as booleans and dates as Date objects.
 */
function pyyamlTags(tags: Tags): Tags {
  return tags
    .filter((tag) => (typeof tag === 'string' ? tag !== 'timestamp' : tag.tag !== 'tag:yaml.org,2002:timestamp'))
    .map((tag) => {
      if (typeof tag === 'string' || tag.tag !== 'tag:yaml.org,2002:bool' || !('test' in tag) || !tag.test) return tag
      return {...tag, test: tag.test.test('true') ? PYYAML_TRUE : PYYAML_FALSE}
    })
}

/** Parse one Gym config file; invalid YAML or a non-mapping top level is an error naming the file and line. */
export function parseConfigFile(file: string, text: string): ParsedConfigFile {
  const lineCounter = new LineCounter()
  const document = parseYamlDocument(text, {version: '1.1', customTags: pyyamlTags, lineCounter, prettyErrors: true})
  const firstError = document.errors[0]
  if (firstError) {
    const line = firstError.linePos?.[0]?.line
    throw gymConfigError('yaml', `invalid YAML: ${describeYamlError(firstError.message)}`, {file, line}, 'Fix the YAML syntax at that line.')
  }
  const data = yamlValue(document, file, {maxAliasCount: 10_000}) ?? {}
  if (!isMapping(data)) {
    const line = document.contents?.range ? lineCounter.linePos(document.contents.range[0]).line : 1
    throw gymConfigError('not-a-mapping', 'the top level of a Gym config must be a mapping of server instance ids', {file, line})
  }
  return {file, data, ...collectLines(document, lineCounter)}
}

/** yaml's messages repeat the position and quote the source; keep the first sentence. */
function describeYamlError(message: string): string {
  if (/Maximum call stack size exceeded/.test(message)) return 'nested too deep to read'
  return message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '').trim()
}

function collectLines(document: Document, lineCounter: LineCounter): {lines: Map<string, number>; missing: Set<string>} {
  const lines = new Map<string, number>()
  const missing = new Set<string>()
  const lineOf = (node: {range?: [number, number, number] | null} | null | undefined): number | undefined =>
    node?.range ? lineCounter.linePos(node.range[0]).line : undefined

  const walk = (node: unknown, path: Path): void => {
    if (isMap(node)) {
      for (const pair of node.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key)
        if (key === '<<') continue
        const pointer = toPointer([...path, key])
        const line = lineOf(pair.key as Node | null)
        if (line !== undefined) lines.set(pointer, line)
        if (isScalar(pair.value) && pair.value.value === MISSING) missing.add(pointer)
        walk(pair.value, [...path, key])
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, index) => {
        const line = lineOf(item as Node | null)
        if (line !== undefined) lines.set(toPointer([...path, index]), line)
        walk(item, [...path, index])
      })
    }
  }
  walk(document.contents, [])
  return {lines, missing}
}

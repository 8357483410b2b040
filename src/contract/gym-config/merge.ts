import {deepClone, hasKey, isMapping, isMissing, type Mapping, setKey} from './tree.js'

/**
 * OmegaConf.merge on plain data: mappings merge key by key, everything else (lists included)
 * is replaced by the later value, and a later `???` never erases a value already set.
 */
export function mergeValues(base: unknown, override: unknown): unknown {
  if (isMapping(base) && isMapping(override)) return mergeInto(deepClone(base), override)
  return deepClone(override)
}

function mergeInto(target: Mapping, override: Mapping): Mapping {
  for (const [key, value] of Object.entries(override)) {
    const present = hasKey(target, key)
    if (present && isMissing(value)) continue
    const current = present ? target[key] : undefined
    if (isMapping(current) && isMapping(value)) mergeInto(current, value)
    else setKey(target, key, deepClone(value))
  }
  return target
}

export function mergeAll(documents: Mapping[]): Mapping {
  return documents.reduce<Mapping>((merged, document) => mergeInto(merged, document), {})
}

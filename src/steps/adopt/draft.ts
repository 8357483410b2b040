/** The draft the user fills: the values they wrote since the last adopt, and the draft written in the contract's order. */
import {promises as fsp} from 'node:fs'
import {Document, isMap, isScalar, isSeq, parse as parseYaml, YAMLMap} from 'yaml'
import {ExitCode, GymError, messageOf} from '../../errors.js'
import {objectFields} from '../../runtime/http.js'
import {TO_FILL} from './types.js'
import type {Tree} from './reading.js'

/** Values the user wrote into the draft since the last adopt. */
export async function userFills(draftPath: string): Promise<Tree> {
  const text = await fsp.readFile(draftPath, 'utf8').catch(() => undefined)
  if (text === undefined) return {}
  try {
    return objectFields(parseYaml(text))
  } catch (error) {
    throw new GymError(`${draftPath} is not valid YAML: ${messageOf(error).split('\n')[0]}`, {code: 'E_CONTRACT_INVALID', exit: ExitCode.usage, hint: 'Fix the draft (or remove it to start over), then rerun adopt.', location: {file: draftPath}})
  }
}

export function draftText(tree: Tree, unfilled: Array<{pointer: string; why: string}>, recipe: string): string {
  const doc = new Document(tree)
  for (const u of unfilled) {
    const keys = u.pointer.split('/').slice(1)
    const node = doc.getIn(keys, true)
    const parent = keys.length > 1 ? doc.getIn(keys.slice(0, -1), true) : doc.contents
    if (isScalar(node) || isMap(node) || isSeq(node)) node.comment = ` fill in: ${u.why}`
    else if (parent instanceof YAMLMap) parent.comment = ` fill in ${keys.at(-1)}: ${u.why}`
  }
  const header = `# Draft contract of the hand-written recipe ${recipe}, read by \`gymrecipe adopt\`.\n# Every "${TO_FILL}" could not be read from the scripts: replace it (null is an answer too), then run\n# adopt again; it writes recipe.yaml once nothing is missing (or use --fill-from <built-in>).\n# The other values are read from the scripts again each time: change the scripts, not this file.\n`
  return header + doc.toString({lineWidth: 0})
}

/** Keys in the order of the built-in contracts, so an adopted recipe.yaml reads like a generated one. */
export function inShapeOrder(tree: Tree, shape: unknown): Tree {
  if (!shape || typeof shape !== 'object' || Array.isArray(shape)) return tree
  const order = Object.keys(shape as Tree)
  const keys = Object.keys(tree).sort((a, b) => (order.indexOf(a) === -1 ? 99 : order.indexOf(a)) - (order.indexOf(b) === -1 ? 99 : order.indexOf(b)))
  return Object.fromEntries(
    keys.map((k) => {
      const v = tree[k]
      return [k, v && typeof v === 'object' && !Array.isArray(v) ? inShapeOrder(v as Tree, (shape as Tree)[k]) : v]
    }),
  )
}

import {promises as fsp} from 'node:fs'
import path from 'node:path'
import {parse as parseYaml} from 'yaml'

import {contractProblems} from './load.js'
import {type OccupiedRecipe, type PortRange, recipePortRanges} from './ports.js'
import {RECIPES_DIR, type RecipeContract} from './types.js'
import {codeOf} from '../errors.js'
import {INPUT_LIMITS, readInputText} from '../runtime/read-input.js'

export function recipeDir(relaxRoot: string, id: string): string {
  return path.join(relaxRoot, RECIPES_DIR, id)
}

async function listDirs(dir: string): Promise<string[]> {
  try {
    const entries = await fsp.readdir(dir, {withFileTypes: true})
    return entries.filter((e) => e.isDirectory()).map((e) => e.name).sort()
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return []
    throw error
  }
}

/** Ports a hand-written recipe binds, read from its shell scripts (port bases, Ray flags and their defaults). */
export function scrapePorts(scripts: string): PortRange[] {
  const ranges: PortRange[] = []
  const add = (label: string, low: number, high = low) => {
    if (low > 0 && high <= 65535 && !ranges.some((r) => r.low === low && r.high === high)) ranges.push({label, pointer: '', low, high})
  }
  for (const m of scripts.matchAll(/\b\w*PORT_BASE[=:-]+"?(\d{2,5})/g)) add('service block', Number(m[1]), Number(m[1]) + 9)
  for (const m of scripts.matchAll(/NEMO_GYM_GATEWAY_PORT:-(\d{2,5})/g)) add('service block', Number(m[1]), Number(m[1]) + 3)
  for (const m of scripts.matchAll(/GYM_RAY_PORT:-(\d{2,5})/g)) add('private Ray GCS', Number(m[1]))
  for (const m of scripts.matchAll(/GYM_DASHBOARD_PORT:-(\d{2,5})/g)) add('private Ray dashboard', Number(m[1]))
  for (const m of scripts.matchAll(/--(?:port|dashboard-port|object-manager-port|node-manager-port|ray-client-server-port|dashboard-agent-listen-port|dashboard-agent-grpc-port|runtime-env-agent-port|metrics-export-port)=(\d{2,5})\b/g)) {
    add('private Ray port', Number(m[1]))
  }
  const min = scripts.match(/--min-worker-port=(\d{2,5})/)
  const max = scripts.match(/--max-worker-port=(\d{2,5})/)
  if (min && max) add('private Ray worker ports', Number(min[1]), Number(max[1]))
  return ranges
}

/** Every other recipe in the checkout and the ports it holds: from recipe.yaml when valid, else from its scripts. */
export async function occupiedRecipes(relaxRoot: string, exceptId: string): Promise<OccupiedRecipe[]> {
  const root = path.join(relaxRoot, RECIPES_DIR)
  const out: OccupiedRecipe[] = []
  for (const id of await listDirs(root)) {
    if (id === exceptId) continue
    const dir = path.join(root, id)
    const contractText = await readInputText(path.join(dir, 'recipe.yaml'), {what: 'recipe.yaml', maxBytes: INPUT_LIMITS.recipeYaml}).catch(() => undefined)
    if (contractText !== undefined) {
      try {
        const value = parseYaml(contractText)
        if (contractProblems(value).length === 0) {
          out.push({id, ranges: recipePortRanges(value as RecipeContract)})
          continue
        }
      } catch {
        // An unreadable contract falls back to the scripts below.
      }
    }
    const scripts = await Promise.all(
      (await fsp.readdir(dir)).filter((f) => f.endsWith('.sh')).map(async (f) => (await readInputText(path.join(dir, f), {what: f, maxBytes: INPUT_LIMITS.recipeFile}).catch(() => undefined)) ?? ''),
    )
    const ranges = scrapePorts(scripts.join('\n'))
    if (ranges.length > 0) out.push({id, ranges})
  }
  return out
}

import Handlebars from 'handlebars'
import {createHash} from 'node:crypto'
import {promises as fsp} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import type {RecipeContract} from '../contract/types.js'
import {withoutRegionBodies} from './regions.js'
import {buildView} from './view.js'

export const TEMPLATES_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'templates')

/** Template file → which of the seven recipe files it renders. */
const TEMPLATE_FOR_ROLE = {
  env: 'env.sh.hbs',
  prepare: 'prepare.sh.hbs',
  start: 'start_gym.sh.hbs',
  run: 'run_training.sh.hbs',
  verify: 'verify.py.hbs',
  readme: 'README.md.hbs',
  pitfall: 'PITFAIL.md.hbs',
} as const

export type FileRole = keyof typeof TEMPLATE_FOR_ROLE

export interface RenderedFile {
  role: FileRole
  /** Name inside the recipe folder. */
  name: string
  content: string
  executable: boolean
  sha256: string
}

import {shellQuote} from '../shell-words.js'
import {pythonLiteral} from './python-literal.js'

export {shellQuote}


function makeHandlebars(): typeof Handlebars {
  const hb = Handlebars.create()
  hb.registerHelper('sh', (value: unknown) => shellQuote(value))
  hb.registerHelper('json', (value: unknown) => JSON.stringify(value))
  hb.registerHelper('py', (value: unknown) => pythonLiteral(value))
  hb.registerHelper('join', (list: unknown[], sep: unknown) => list.join(typeof sep === 'string' ? sep : ','))
  // "${NAME:-default}": the default is fixed at generation time, the caller's environment still wins.
  hb.registerHelper('envdefault', (...args: unknown[]) => {
    const parts = args.slice(0, -1).map(String)
    const [name, ...value] = parts
    return `"\${${name}:-${value.join('')}}"`
  })
  hb.registerHelper('eq', (a: unknown, b: unknown) => a === b)
  hb.registerHelper('md', (value: unknown) => String(value).replaceAll('|', '\\|'))
  return hb
}

let compiled: Map<string, HandlebarsTemplateDelegate> | undefined

async function loadTemplates(): Promise<Map<string, HandlebarsTemplateDelegate>> {
  if (compiled) return compiled
  const hb = makeHandlebars()
  const partialsDir = path.join(TEMPLATES_DIR, 'partials')
  for (const entry of await fsp.readdir(partialsDir)) {
    const name = entry.replace(/\.hbs$/, '')
    hb.registerPartial(name, await fsp.readFile(path.join(partialsDir, entry), 'utf8'))
  }
  const map = new Map<string, HandlebarsTemplateDelegate>()
  for (const file of Object.values(TEMPLATE_FOR_ROLE)) {
    const source = await fsp.readFile(path.join(TEMPLATES_DIR, file), 'utf8')
    // strict: a missing value is an error, never an empty string in a script.
    map.set(file, hb.compile(source, {strict: true, noEscape: true}))
  }
  compiled = map
  return map
}

export function sha256(content: string): string {
  return `sha256:${createHash('sha256').update(content).digest('hex')}`
}

/** Render the seven recipe files. A pure function of the contract and the templates. */
export async function renderRecipe(contract: RecipeContract): Promise<RenderedFile[]> {
  const templates = await loadTemplates()
  const view = buildView(contract)
  return (Object.keys(TEMPLATE_FOR_ROLE) as FileRole[]).map((role) => {
    const content = templates.get(TEMPLATE_FOR_ROLE[role])!(view)
    const name = view.files[role]
    // The hash leaves out the user's regions, so writing into them is not a hand edit.
    return {role, name, content, executable: name.endsWith('.sh') || name.endsWith('.py'), sha256: sha256(withoutRegionBodies(content))}
  })
}

import type Handlebars from 'handlebars'
import runtimeModule from 'handlebars/runtime.js'
import {createHash} from 'node:crypto'
import {promises as fsp} from 'node:fs'
import path from 'node:path'

import type {RecipeContract} from '../contract/types.js'
import {PACKAGE_ROOT} from '../package-root.js'
import {contentHash, generatedModule} from '../precompiled.js'
import {shellQuote} from '../shell-words.js'
import {pythonLiteral} from './python-literal.js'
import {inertInMarkdown, withoutRegionBodies} from './regions.js'
import {buildView, type RenderDeployment} from './view.js'

export const TEMPLATES_DIR = path.join(PACKAGE_ROOT, 'templates')

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


export {shellQuote}


/** How every template is compiled. strict: a missing value is an error, never an empty string in a script. */
export const TEMPLATE_OPTIONS = {strict: true, noEscape: true} as const

type HandlebarsEnv = typeof Handlebars
/** The runtime alone (no compiler): all a precompiled template needs. Its typings do not describe it. */
const HandlebarsRuntime = runtimeModule as unknown as HandlebarsEnv

function withHelpers(hb: HandlebarsEnv): HandlebarsEnv {
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

export interface TemplateSources {
  partials: Record<string, string>
  templates: Record<string, string>
  /** Of every file, by name: what a precompiled set must have been made from. */
  hash: string
}

export async function readTemplateSources(): Promise<TemplateSources> {
  const partialsDir = path.join(TEMPLATES_DIR, 'partials')
  const partialFiles = (await fsp.readdir(partialsDir)).sort()
  const templateFiles = Object.values(TEMPLATE_FOR_ROLE)
  // read at once: one after the other, the waits for the file system add up at every start
  const read = (dir: string, files: string[]) => Promise.all(files.map((file) => fsp.readFile(path.join(dir, file), 'utf8')))
  const [partialTexts, templateTexts] = await Promise.all([read(partialsDir, partialFiles), read(TEMPLATES_DIR, templateFiles)])
  const partials = Object.fromEntries(partialFiles.map((entry, k) => [entry.replace(/\.hbs$/, ''), partialTexts[k]]))
  const templates = Object.fromEntries(templateFiles.map((file, k) => [file, templateTexts[k]]))
  const hash = contentHash(JSON.stringify({partials, templates, options: TEMPLATE_OPTIONS}))
  return {partials, templates, hash}
}

interface PrecompiledTemplates {
  hash: string
  partials: Record<string, TemplateSpecification>
  templates: Record<string, TemplateSpecification>
}

let compiled: Promise<Map<string, HandlebarsTemplateDelegate>> | undefined

/** The templates, precompiled at build time when they were made from these sources; else compiled now. */
function loadTemplates(): Promise<Map<string, HandlebarsTemplateDelegate>> {
  compiled ??= (async () => {
    const sources = await readTemplateSources()
    const generated = generatedModule('templates') as PrecompiledTemplates | undefined
    const map = new Map<string, HandlebarsTemplateDelegate>()
    if (generated?.hash === sources.hash) {
      const hb = withHelpers(HandlebarsRuntime.create())
      for (const [name, spec] of Object.entries(generated.partials)) hb.registerPartial(name, hb.template(spec))
      for (const [file, spec] of Object.entries(generated.templates)) map.set(file, hb.template(spec))
      return map
    }
    const {default: compiler} = await import('handlebars')
    const hb = withHelpers(compiler.create())
    for (const [name, text] of Object.entries(sources.partials)) hb.registerPartial(name, text)
    for (const [file, text] of Object.entries(sources.templates)) map.set(file, hb.compile(text, TEMPLATE_OPTIONS))
    return map
  })()
  return compiled
}

export function sha256(content: string): string {
  return `sha256:${createHash('sha256').update(content).digest('hex')}`
}

/** Render the seven recipe files. A pure function of the contract, the deployment's defaults and the templates. */
export async function renderRecipe(contract: RecipeContract, deployment: RenderDeployment = {}): Promise<RenderedFile[]> {
  const templates = await loadTemplates()
  const view = buildView(contract, deployment)
  const markdownView = inertValues(view)
  return (Object.keys(TEMPLATE_FOR_ROLE) as FileRole[]).map((role) => {
    const content = templates.get(TEMPLATE_FOR_ROLE[role])!(role === 'readme' || role === 'pitfall' ? markdownView : view)
    const name = view.files[role]
    // The hash leaves out the user's regions, so writing into them is not a hand edit.
    return {role, name, content, executable: name.endsWith('.sh') || name.endsWith('.py'), sha256: sha256(withoutRegionBodies(content))}
  })
}

/** Every string of the view with HTML comment markers made inert (for the Markdown files). */
function inertValues<T>(value: T): T {
  if (typeof value === 'string') return inertInMarkdown(value) as T
  if (Array.isArray(value)) return value.map(inertValues) as T
  if (value && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, inertValues(v)])) as T
  }
  return value
}

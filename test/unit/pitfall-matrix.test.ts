/**
 * The pitfall matrix (docs/pitfalls.json, rendered as docs/pitfalls.md): every pitfall the real
 * Relax recipes record, and how gymrecipe accounts for it. A row that claims "prevented" or
 * "detected" needs a test whose name carries its key as [key]; a "documented" row must be in the
 * generated PITFAIL.md of its archetypes; an "out of reach" row must say what evidence would show it.
 */
import {readdir, readFile, writeFile} from 'node:fs/promises'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {ARCHETYPE_BASE, loadBuiltin} from '../../src/contract/builtin.js'
import {renderRecipe} from '../../src/scaffold/render.js'
import {repoRoot} from '../helpers/cli.js'

interface Row {
  key: string
  recipe: string
  number: number
  pitfall: string
  status: 'prevented' | 'detected' | 'documented' | 'out of reach'
  guard: string
  checks?: string[]
  pitfail?: Array<keyof typeof ARCHETYPE_BASE>
  evidence?: string
  rung?: string
}

const matrix = JSON.parse(await readFile(path.join(repoRoot, 'docs', 'pitfalls.json'), 'utf8')) as {about: string; rows: Row[]}
const rows = matrix.rows
const STATUSES = ['prevented', 'detected', 'documented', 'out of reach']
// As the Relax recipes record them (reference: relax-nemo-gym.md §10).
const PER_RECIPE = {calendar: 14, 'workplace-assistant': 17, gsm8k: 10, 'r2e-gym': 24, 'reasoning-gym-cc': 1}

async function files(dir: string, ext: string): Promise<string[]> {
  const out: string[] = []
  for (const entry of await readdir(dir, {withFileTypes: true})) {
    const p = path.join(dir, entry.name)
    if (entry.isDirectory()) out.push(...(await files(p, ext)))
    else if (entry.name.endsWith(ext)) out.push(p)
  }
  return out
}

/** Titles of tests (it / it.each) and the strings of it.each tables, with the file they are in. */
async function testTitles(): Promise<Array<{file: string; text: string}>> {
  const out: Array<{file: string; text: string}> = []
  for (const file of await files(path.join(repoRoot, 'test'), '.test.ts')) {
    if (file.endsWith('pitfall-matrix.test.ts')) continue
    const text = await readFile(file, 'utf8')
    for (const m of text.matchAll(/\bit(?:\.each\([\s\S]*?\)|\.skipIf\([^)]*\))?\(\s*(['"`])((?:\\.|(?!\1).)*)\1/g)) out.push({file, text: m[2]})
    // Table rows of it.each([...]) name their cases in their first strings.
    for (const m of text.matchAll(/^\s*\[\s*'[^']*'\s*,\s*'((?:\\.|[^'])*)'/gm)) out.push({file, text: m[1]})
    for (const m of text.matchAll(/^\s*\[\s*'((?:\\.|[^'])*\[[a-z0-9-]+#\d+\](?:\\.|[^'])*)'/gm)) out.push({file, text: m[1]})
  }
  return out
}

export function renderMatrix(): string {
  const counts = STATUSES.map((s) => `${rows.filter((r) => r.status === s).length} ${s}`).join(', ')
  const lines = [
    '# Every real Relax pitfall, accounted for',
    '',
    `${matrix.about}`,
    '',
    `${rows.length} entries: ${counts}. Generated from [pitfalls.json](pitfalls.json), which the tests read (\`test/unit/pitfall-matrix.test.ts\`): a prevented or detected row needs a test named with its key, a documented row must be in the generated PITFAIL.md of its archetypes.`,
    '',
    '| key | pitfall | status | how |',
    '|---|---|---|---|',
  ]
  for (const r of rows) {
    const how = [r.guard, r.checks ? `Checks: ${r.checks.map((c) => `\`${c}\``).join(', ')}.` : '', r.pitfail ? `In the generated PITFAIL.md of: ${r.pitfail.join(', ')}.` : '', r.evidence ? `Evidence that would show it: ${r.evidence} (${r.rung} rung).` : '']
    lines.push(`| \`${r.key}\` | ${r.pitfall.replaceAll('|', '\\|')} | ${r.status} | ${how.filter(Boolean).join(' ').replaceAll('|', '\\|')} |`)
  }
  return `${lines.join('\n')}\n`
}

describe('the pitfall matrix', () => {
  it('has one row per real entry: 66, keyed recipe#number, numbered as the recipes number them', () => {
    expect(rows).toHaveLength(66)
    expect(new Set(rows.map((r) => r.key)).size).toBe(66)
    for (const [recipe, count] of Object.entries(PER_RECIPE)) {
      const numbers = rows.filter((r) => r.recipe === recipe).map((r) => r.number)
      const first = recipe === 'workplace-assistant' ? 0 : 1
      expect(numbers, recipe).toEqual(Array.from({length: count}, (_, i) => i + first))
    }
    for (const r of rows) expect(r.key).toBe(`${r.recipe}#${r.number}`)
  })

  it('gives every row a status, and each status what it owes', async () => {
    const source = (await Promise.all((await files(path.join(repoRoot, 'src'), '.ts')).map((f) => readFile(f, 'utf8')))).join('\n')
    for (const r of rows) {
      expect(STATUSES, r.key).toContain(r.status)
      expect(r.guard.length, r.key).toBeGreaterThan(20)
      if (r.status === 'detected') expect(r.checks?.length, `${r.key} names the check that fires`).toBeGreaterThan(0)
      for (const check of r.checks ?? []) expect(source.includes(`'${check}'`), `${r.key}: ${check} is a check id or error code in src/`).toBe(true)
      if (r.status === 'documented') expect(r.pitfail?.length, `${r.key} names the archetypes whose PITFAIL.md carries it`).toBeGreaterThan(0)
      if (r.status === 'out of reach') expect([r.evidence, r.rung].every(Boolean), `${r.key} says what evidence would show it and which rung reads it`).toBe(true)
    }
  })

  it('has a reproducing test named with the key of every prevented or detected row', async () => {
    const titles = await testTitles()
    const missing = rows.filter((r) => r.status === 'prevented' || r.status === 'detected').filter((r) => !titles.some((t) => t.text.includes(`[${r.key}]`)))
    expect(missing.map((r) => r.key)).toEqual([])
    // And no test claims a key the matrix does not have, or one that is not prevented or detected.
    const claimed = [...new Set(titles.flatMap((t) => [...t.text.matchAll(/\[([a-z0-9-]+#\d+)\]/g)].map((m) => m[1])))]
    for (const key of claimed) expect(rows.find((r) => r.key === key)?.status, key).toMatch(/^(prevented|detected)$/)
  })

  it.each(Object.entries(ARCHETYPE_BASE))('seeds the generated PITFAIL.md of %s with its documented entries, above the recorded ones', async (archetype, builtin) => {
    const pitfail = (await renderRecipe(await loadBuiltin(builtin))).find((f) => f.role === 'pitfall')!.content
    const recorded = pitfail.indexOf('<!-- gymrecipe:recorded-pitfalls:begin')
    expect(recorded).toBeGreaterThan(0)
    for (const r of rows.filter((x) => x.pitfail?.includes(archetype as Row['pitfail'] extends Array<infer A> | undefined ? A : never))) {
      const at = pitfail.search(new RegExp(`(?:\\(Relax: |, )${r.key}[,)]`))
      expect(at, `${r.key} in the ${archetype} PITFAIL.md`).toBeGreaterThan(0)
      expect(at, `${r.key} above the recorded entries`).toBeLessThan(recorded)
    }
  })

  it('lists every out-of-reach row where the testing notes say what stays unverified', async () => {
    const readme = await readFile(path.join(repoRoot, 'docs', 'testing.md'), 'utf8')
    const section = readme.slice(readme.indexOf('What stays unverified'), readme.indexOf('\n## ', readme.indexOf('What stays unverified')))
    for (const r of rows.filter((x) => x.status === 'out of reach')) expect(section, r.key).toContain(r.key)
  })

  it('is rendered in docs/pitfalls.md', async () => {
    const file = path.join(repoRoot, 'docs', 'pitfalls.md')
    if (process.env.GYMRECIPE_UPDATE_EXPECTED === '1') await writeFile(file, renderMatrix())
    expect(await readFile(file, 'utf8')).toBe(renderMatrix())
  })
})

#!/usr/bin/env node
/**
 * docs/commands.md from the oclif manifest the build writes: every command's summary, usage,
 * arguments, flags, description (with its exit statuses) and examples, in the manifest's words, so
 * the reference cannot drift from `--help`. A test compares the committed file with this output.
 *
 *   npm run build && npm run docs:commands
 */
import {readFileSync, writeFileSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const REFERENCE_FILE = path.join(repo, 'docs', 'commands.md')

function flagLine(flag) {
  const name = `--${flag.name}${flag.char ? `, -${flag.char}` : ''}`
  const value = flag.type === 'option' ? ` <${flag.helpValue ?? 'value'}>` : ''
  const notes = [
    flag.required ? 'required' : undefined,
    flag.multiple ? 'repeatable' : undefined,
    flag.options ? `one of: ${flag.options.join(', ')}` : undefined,
    flag.default !== undefined && flag.default !== false ? `default: ${JSON.stringify(flag.default)}` : undefined,
  ].filter(Boolean)
  const text = (flag.summary ?? flag.description ?? '').replaceAll('\n', ' ')
  return `- \`${name}${value}\` ${text}${notes.length > 0 ? ` (${notes.join('; ')})` : ''}`
}

/** The reference as Markdown, from a parsed oclif.manifest.json. */
export function renderCommandReference(manifest, bin = 'gymrecipe') {
  const ids = Object.keys(manifest.commands).sort()
  const out = [
    '# Command reference',
    '',
    `Generated from the CLI's own help (\`npm run docs:commands\`); \`${bin} <command> --help\` shows the same.`,
    'Every command also takes `--json` (one envelope on stdout) and `--help`.',
    '',
    ...ids.map((id) => `- [\`${bin} ${id.replaceAll(':', ' ')}\`](#${anchor(`${bin} ${id.replaceAll(':', ' ')}`)})`),
  ]
  for (const id of ids) {
    const c = manifest.commands[id]
    const words = `${bin} ${id.replaceAll(':', ' ')}`
    const args = Object.values(c.args ?? {})
    const usage = [words, ...args.map((a) => (a.required ? `<${a.name}>` : `[${a.name}]`)), '[flags]'].join(' ')
    out.push('', `## ${words}`, '', c.summary ?? '', '', '```', usage, '```')
    if (args.length > 0) {
      out.push('', 'Arguments:', '')
      for (const a of args) out.push(`- \`${a.name}\` ${(a.description ?? '').replaceAll('\n', ' ')}`)
    }
    const flags = Object.values(c.flags ?? {}).filter((f) => !f.hidden && f.name !== 'json' && f.name !== 'help')
    if (flags.length > 0) {
      out.push('', 'Flags:', '')
      for (const f of flags.sort((a, b) => a.name.localeCompare(b.name))) out.push(flagLine(f))
    }
    if (c.description) out.push('', '```text', c.description.trimEnd(), '```')
    const examples = (c.examples ?? []).map((e) => (typeof e === 'string' ? e : e.command)).map((e) => e.replaceAll('<%= config.bin %>', bin))
    if (examples.length > 0) out.push('', 'Examples:', '', '```bash', ...examples, '```')
  }
  return `${out.join('\n')}\n`
}

function anchor(heading) {
  return heading.toLowerCase().replace(/[^a-z0-9 -]/g, '').replaceAll(' ', '-')
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const manifest = JSON.parse(readFileSync(path.join(repo, 'oclif.manifest.json'), 'utf8'))
  writeFileSync(REFERENCE_FILE, renderCommandReference(manifest))
  console.log(`wrote ${path.relative(repo, REFERENCE_FILE)} (${Object.keys(manifest.commands).length} commands)`)
}

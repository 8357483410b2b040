/**
 * docs/commands.md is the CLI's own help, generated: it must equal what the generator makes of the
 * manifest the build writes, so a flag or command changed without regenerating it fails here.
 */
import {readFile} from 'node:fs/promises'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {repoRoot} from '../helpers/cli.js'

describe('the command reference', () => {
  it('docs/commands.md is what `npm run docs:commands` makes of the current manifest', async () => {
    const {renderCommandReference, REFERENCE_FILE} = await import(path.join(repoRoot, 'scripts', 'command-reference.mjs'))
    const manifest = JSON.parse(await readFile(path.join(repoRoot, 'oclif.manifest.json'), 'utf8'))
    const committed = await readFile(REFERENCE_FILE, 'utf8')
    expect(committed, 'run `npm run build && npm run docs:commands`').toBe(renderCommandReference(manifest))
  })

  it('names every command and every flag of the manifest', async () => {
    const {renderCommandReference} = await import(path.join(repoRoot, 'scripts', 'command-reference.mjs'))
    const manifest = JSON.parse(await readFile(path.join(repoRoot, 'oclif.manifest.json'), 'utf8'))
    const text: string = renderCommandReference(manifest)
    for (const [id, command] of Object.entries<any>(manifest.commands)) {
      expect(text).toContain(`## gymrecipe ${id.replaceAll(':', ' ')}\n`)
      for (const flag of Object.values<any>(command.flags)) if (!flag.hidden && flag.name !== 'json' && flag.name !== 'help') expect(text, `${id} --${flag.name}`).toContain(`\`--${flag.name}`)
    }
  })
})

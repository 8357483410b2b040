import {execa} from 'execa'
import {readFile} from 'node:fs/promises'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {repoRoot, runCli} from '../helpers/cli.js'

describe('gymrecipe --version', () => {
  it('prints what oclif prints in --help, from the fast path', async () => {
    const pkg = JSON.parse(await readFile(path.join(repoRoot, 'package.json'), 'utf8'))
    const version = await runCli(['--version'])
    expect(version.exitCode).toBe(0)
    expect(version.stdout.trim()).toBe(`gymrecipe/${pkg.version} ${process.platform}-${process.arch} node-${process.version}`)
    const help = await runCli(['--help'])
    expect(help.stdout).toContain(`VERSION\n  ${version.stdout.trim()}`)
  })

  it('offers did-you-mean for a mistyped command on a terminal, and shell completion', async () => {
    const typo = await runCli(['verfy'])
    // A usage error, as the exit-status table says (oclif's own code would be 127).
    expect(typo.exitCode).toBe(2)
    expect(typo.stderr).toMatch(/verfy is not a gymrecipe command/)
    // On a terminal (util-linux `script` provides one) the user is asked; answer no.
    const bin = path.join(repoRoot, 'bin', 'run.js')
    const tty = await execa('script', ['-qec', `${process.execPath} ${bin} verfy`, '/dev/null'], {input: 'n\n', reject: false, timeout: 30_000, env: {NO_COLOR: '1'}})
    const escape = String.fromCharCode(27)
    expect(String(tty.stdout).split(escape).map((part) => part.replace(/^\[[0-9;?]*[A-Za-z]/, '')).join('')).toContain('Did you mean verify?')
    const completion = await runCli(['autocomplete', 'bash'])
    expect(completion.exitCode).toBe(0)
    expect(completion.stdout).toContain('gymrecipe')
  })

  it('never wraps an error message when stderr is not a terminal (paths stay greppable)', async () => {
    const root = `/nonexistent/${'deep/'.repeat(20)}relax`
    const r = await runCli(['new', 'wrapcheck', '--gym-root', repoRoot, '--gym-config', 'x.yaml', '--relax-root', root])
    expect(r.exitCode).toBe(2)
    expect(r.stderr).toContain(`Relax checkout ${root} does not exist`)
  })
})

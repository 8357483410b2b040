import {promises as fsp} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {afterEach, describe, expect, it} from 'vitest'
import {runScript} from '../../src/runtime/script.js'

const dirs: string[] = []
afterEach(async () => {
  for (const d of dirs.splice(0)) await fsp.rm(d, {recursive: true, force: true})
})

async function script(body: string): Promise<{file: string; dir: string}> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'gr-script-'))
  dirs.push(dir)
  const file = path.join(dir, 'run.sh')
  await fsp.writeFile(file, `#!/usr/bin/env bash\n${body}\n`)
  return {file, dir}
}

function start(file: string, dir: string) {
  let out = ''
  const run = runScript(file, {cwd: dir, env: {PATH: process.env.PATH}, onOutput: (_s, t) => { out += t }})
  return {run, output: () => out}
}

async function until(check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe('runScript stop', () => {
  it('a child that ignores the signal and outlives bash is killed, so the group is gone', async () => {
    // bash exits on INT from its trap; the child ignores INT and would keep running for 60 s.
    const {file, dir} = await script(`(trap '' INT TERM; exec sleep 60) &\ntrap 'exit 130' INT\necho ready\nwhile :; do sleep 0.1; done`)
    const {run, output} = start(file, dir)
    await until(() => output().includes('ready'))
    const startedAt = Date.now()
    await run.stop('SIGINT', 5000)
    expect(run.running()).toBe(false)
    expect(run.groupAlive()).toBe(false)
    expect((await run.exited).exitCode).toBe(130)
    // bash left at once; only the short leftover grace passed before the SIGKILL.
    expect(Date.now() - startedAt).toBeLessThan(4000)
  })

  it('a bash that ignores the first signal is killed after the grace period', async () => {
    const {file, dir} = await script(`trap '' INT\necho ready\nwhile :; do sleep 0.1; done`)
    const {run, output} = start(file, dir)
    await until(() => output().includes('ready'))
    await run.stop('SIGINT', 300)
    expect(run.groupAlive()).toBe(false)
    expect((await run.exited).signal).toBe('SIGKILL')
  })

  it('stopping a script that already finished signals nothing', async () => {
    const {file, dir} = await script('echo done')
    const {run} = start(file, dir)
    expect((await run.exited).exitCode).toBe(0)
    await until(() => !run.groupAlive())
    expect(run.signalGroup('SIGTERM')).toBe(false)
    await run.stop('SIGTERM', 1000)
    expect(run.running()).toBe(false)
  })
})

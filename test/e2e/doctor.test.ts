import {mkdtemp, symlink} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {runCli} from '../helpers/cli.js'

describe('gymrecipe doctor', () => {
  it('reports every tool with a status and exits 0 when the required ones are present', async () => {
    const result = await runCli(['doctor', '--json'])
    expect(result.exitCode).toBe(0)
    const ids = result.json.tools.map((t: any) => t.id)
    expect(ids).toEqual(['node', 'bash', 'shellcheck', 'python3', 'docker', 'docker-daemon', 'docker-buildx', 'curl', 'jq', 'git', 'ray'])
    // buildx is optional: without it the scripts build with the legacy builder, and doctor says how to get BuildKit.
    const buildx = result.json.tools.find((t: any) => t.id === 'docker-buildx')
    expect(buildx.required).toBe(false)
    if (buildx.status !== 'ok') expect(buildx).toMatchObject({status: 'unusable', message: expect.stringContaining('docker buildx version failed'), hint: expect.stringContaining('docker-buildx')})
    const shellcheck = result.json.tools.find((t: any) => t.id === 'shellcheck')
    expect(shellcheck.status).toBe('ok')
    expect(shellcheck.version).toMatch(/\d+\.\d+/)
  })

  it('exits 3 and names the fix when a required tool is missing from PATH', async () => {
    // A PATH holding only node: bash, shellcheck, python3, docker, curl and jq are all missing.
    const dir = await mkdtemp(path.join(os.tmpdir(), 'gr-doctor-'))
    await symlink(process.execPath, path.join(dir, 'node'))
    const result = await runCli(['doctor', '--json'], {env: {PATH: dir, DOCKER_HOST: 'unix:///nonexistent.sock'}})
    expect(result.exitCode).toBe(3)
    const shellcheck = result.json.tools.find((t: any) => t.id === 'shellcheck')
    expect(shellcheck.status).toBe('missing')
    expect(shellcheck.hint).toContain('apt-get install -y shellcheck')
    const daemon = result.json.tools.find((t: any) => t.id === 'docker-daemon')
    expect(daemon.status).toBe('missing')
    expect(daemon.path).toBe('/nonexistent.sock')
  })

  it('prints a readable table for people', async () => {
    const result = await runCli(['doctor'])
    expect(result.stdout).toMatch(/✔ node/)
    expect(result.stdout).toMatch(/docker-daemon/)
  })
})

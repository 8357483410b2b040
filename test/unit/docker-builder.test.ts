/**
 * BuildKit where docker has buildx, the legacy builder where it has not (asking for BuildKit
 * there fails the build), and the caller's DOCKER_BUILDKIT kept as set. A stand-in `docker` on
 * PATH answers `buildx version` the way each kind of installation does.
 */
import {existsSync} from 'node:fs'
import {chmod, mkdtemp, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {chooseDockerBuilder} from '../../src/runtime/docker-builder.js'

async function dockerThat(script: string): Promise<NodeJS.ProcessEnv> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gr-docker-'))
  await writeFile(path.join(dir, 'docker'), `#!/bin/sh\n${script}\n`)
  await chmod(path.join(dir, 'docker'), 0o755)
  const {DOCKER_BUILDKIT: _unset, ...env} = process.env
  return {...env, PATH: `${dir}:${process.env.PATH}`}
}

describe('the builder of the scripts\' docker build', () => {
  it('is BuildKit, with plain progress, when docker has buildx', async () => {
    const env = await dockerThat('[ "$1 $2" = "buildx version" ] && echo "github.com/docker/buildx 0.13.1 ok" && exit 0; exit 1')
    expect(await chooseDockerBuilder(env)).toEqual({builder: 'buildkit', env: {DOCKER_BUILDKIT: '1', BUILDKIT_PROGRESS: 'plain'}, note: 'docker build: BuildKit (github.com/docker/buildx 0.13.1 ok)'})
  })

  it('is the legacy builder, with nothing added, when docker has no buildx', async () => {
    const env = await dockerThat('echo "docker: unknown command: docker buildx" >&2; exit 1')
    expect(await chooseDockerBuilder(env)).toMatchObject({builder: 'legacy', env: {}, note: expect.stringContaining('install the buildx plugin')})
  })

  it('is whatever the caller chose with DOCKER_BUILDKIT, without asking docker', async () => {
    const env = await dockerThat('echo asked > "$0.asked"; exit 0')
    expect(await chooseDockerBuilder({...env, DOCKER_BUILDKIT: '0'})).toEqual({builder: 'caller', env: {}, note: 'docker build: DOCKER_BUILDKIT=0 as set'})
    expect(existsSync(path.join(env.PATH!.split(':')[0], 'docker.asked'))).toBe(false)
  })

  it('is the legacy builder when there is no docker at all', async () => {
    expect(await chooseDockerBuilder({PATH: '/nonexistent'})).toMatchObject({builder: 'legacy', env: {}})
  })
})

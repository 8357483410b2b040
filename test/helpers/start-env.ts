/**
 * A generated calendar-like recipe inside a fresh fixture Relax checkout, ready for
 * `gymrecipe start` on the real Docker Engine: unique recipe id (so container, image and the
 * ownership label are this test's alone), its own port block, raw data at NEMO_GYM_SOURCE_DATA,
 * and the environment the tests run the CLI with (loopback only).
 */
import {execa} from 'execa'
import {randomBytes} from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {newRecipe} from '../../src/scaffold/new-recipe.js'
import {repoRoot, snapshotRoot} from './cli.js'
import {repeatedRows} from './recipes.js'
import {removeByLabel} from './docker.js'
import {type FixtureFaults, makeRelaxCheckout, type RelaxCheckout} from './relax-fixture.js'

export interface StartFixture {
  tmp: string
  checkout: RelaxCheckout
  relaxRoot: string
  id: string
  dir: string
  container: string
  image: string
  gatewayPort: number
  resourcePort: number
  /** Environment for the CLI (merged over process.env by runCli). */
  env: Record<string, string>
  /** Remove every container and image labelled ai.relax.recipe=<id>, and the temp dir. */
  cleanup(): Promise<void>
}

export async function startFixture(options: {purpose: string; portBase: number; faults?: FixtureFaults; tracebackPatch?: boolean}): Promise<StartFixture> {
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), `gymrecipe-${options.purpose}-`))
  const checkout = await makeRelaxCheckout(path.join(tmp, 'relax'), {hostGym: false, snapshotDir: snapshotRoot, faults: options.faults, tracebackPatch: options.tracebackPatch})
  const id = `${options.purpose}-${randomBytes(3).toString('hex')}`
  const result = await newRecipe({
    id,
    gymRoot: snapshotRoot,
    gymConfigs: ['environments/calendar/config.yaml'],
    relaxRoot: checkout.root,
    from: 'calendar',
    smoke: false,
    portBase: options.portBase,
    // inside the block (base+18 is unused), so concurrent tests never share a GCS port
    gcsPort: options.portBase + 18,
    force: false,
    dryRun: false,
    version: 'test',
  })
  const dataDir = path.join(tmp, 'data')
  await fs.mkdir(dataDir, {recursive: true})
  const source = path.join(dataDir, result.contract.data.raw_filename)
  await fs.writeFile(source, await repeatedRows(path.join(snapshotRoot, 'environments/calendar/data/example.jsonl')))
  const image = `gymrecipe-test-start:${id}`
  const label = `ai.relax.recipe=${id}`
  return {
    tmp,
    checkout,
    relaxRoot: checkout.root,
    id,
    dir: result.dir,
    container: result.contract.service.container,
    image,
    gatewayPort: result.contract.service.gateway_port,
    resourcePort: result.contract.service.gateway_port + 2,
    env: {
      GYM_HOST: '127.0.0.1',
      GYM_BIND_HOST: '127.0.0.1',
      NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '127.0.0.0/8',
      NEMO_GYM_IMAGE: image,
      NEMO_GYM_SOURCE_DATA: source,
      DOCKER_CLI_HINTS: 'false',
      // The Gym checkout the image's tree is compared with (service.gym-tree).
      GYMRECIPE_GYM_ROOT: snapshotRoot,
    },
    async cleanup() {
      await removeByLabel(label).catch(() => undefined)
      await fs.rm(tmp, {recursive: true, force: true})
    },
  }
}

export interface LiveCli {
  pid: number
  stdout(): string
  stderr(): string
  /** Resolves with the time (ms) a line matching pattern first appeared on stdout or stderr. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<number>
  /** Exit code and the moment the process exited. */
  exited: Promise<{exitCode: number; at: number}>
}

/** Run the built CLI as a live process (for signals and timing). */
export function spawnCli(args: string[], env: Record<string, string | undefined>): LiveCli {
  const child = execa(process.execPath, [path.join(repoRoot, 'bin', 'run.js'), ...args], {
    reject: false,
    cwd: repoRoot,
    env: {NO_COLOR: '1', ...env},
    buffer: false,
    stdin: 'ignore',
  })
  let out = ''
  let err = ''
  const seen: Array<{at: number; text: string}> = []
  const waiters: Array<() => void> = []
  const push = (which: 'out' | 'err') => (chunk: Buffer) => {
    const text = chunk.toString('utf8')
    if (which === 'out') out += text
    else err += text
    seen.push({at: Date.now(), text})
    for (const w of waiters.splice(0)) w()
  }
  child.stdout?.on('data', push('out'))
  child.stderr?.on('data', push('err'))
  let done = false
  const exited = child.then((r) => {
    done = true
    for (const w of waiters.splice(0)) w()
    return {exitCode: r.exitCode ?? -1, at: Date.now()}
  })
  return {
    pid: child.pid ?? -1,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor(pattern, timeoutMs = 120_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out waiting for ${pattern}\n--- stdout\n${out}\n--- stderr\n${err}`)), timeoutMs)
        const check = () => {
          // Match against the accumulated text so a line split across chunks is still found.
          let acc = ''
          for (const s of seen) {
            acc += s.text
            if (pattern.test(acc)) {
              clearTimeout(timer)
              resolve(s.at)
              return
            }
          }
          if (done) {
            clearTimeout(timer)
            reject(new Error(`CLI exited before ${pattern}\n--- stdout\n${out}\n--- stderr\n${err}`))
            return
          }
          waiters.push(check)
        }
        check()
      })
    },
  }
}

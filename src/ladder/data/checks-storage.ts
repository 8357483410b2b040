import path from 'node:path'

import {dockerTarget, tryDocker, unsupportedHostMessage} from '../../runtime/docker.js'
import {type ProbeOutcome, probeImageCandidates, probeSharedPath} from '../../runtime/storage-probe.js'
import type {Check} from '../types.js'
import {dataPlan} from './source.js'

export const sharedStorage: Check = {
  id: 'data.shared-storage',
  title: 'a container sees the data at the same absolute path',
  async run(ctx) {
    const plan = await dataPlan(ctx)
    if (!plan.file || !plan.stat?.isFile) return {status: 'skip', message: 'not checked: there is no source file to look for'}
    const target = dockerTarget(ctx.options.env)
    const docker = await tryDocker(target)
    if (!docker) {
      return {status: 'skip', message: `not checked: ${target.unsupportedHost ? unsupportedHostMessage(target.unsupportedHost) : `no Docker daemon answers at ${target.socketPath}`}`, hint: 'Start Docker (or set DOCKER_HOST=unix:///path/to/docker.sock) and rerun; a path visible here may still be invisible to the daemon.'}
    }
    const candidates = await probeImageCandidates(docker, plan.image, ctx.target.id, ctx.options.env)
    if (candidates.length === 0) {
      return {
        status: 'skip',
        message: `not checked: there is no local image at all to start a probe container from (NEMO_GYM_IMAGE ${plan.image ?? '(unset)'} is not built here)`,
        hint: '`gymrecipe prepare` builds NEMO_GYM_IMAGE; or load any small image with coreutils (docker load, docker import) and set GYMRECIPE_PROBE_IMAGE to it.',
      }
    }
    const dir = path.dirname(plan.file)
    // Any local image may lack wc: the next candidate is tried, never a failure for that alone.
    let image = candidates[0]
    let probe: ProbeOutcome = await probeSharedPath(docker, {image: image.image, file: plan.file, dir, recipeId: ctx.target.id})
    for (const next of candidates.slice(1)) {
      if (probe.status === 'seen' || !cannotRunWc(probe)) break
      image = next
      probe = await probeSharedPath(docker, {image: image.image, file: plan.file, dir, recipeId: ctx.target.id})
    }
    if (probe.status === 'not-seen' && cannotRunWc(probe)) {
      return {status: 'skip', message: `not checked: no local image tried (${candidates.map((c) => c.image).join(', ')}) can run wc`, hint: 'Set GYMRECIPE_PROBE_IMAGE to a local image that has coreutils, or build NEMO_GYM_IMAGE (`gymrecipe prepare`).'}
    }
    const evidence = {image: image.image, imageChoice: image.why, mount: `${dir}:${dir}:ro`, network: 'none', ...probe}
    const hint = 'The Docker daemon must see this path (not the case with Docker-in-Docker, a remote daemon, or a mount only this shell has): put the data on storage that the daemon host and every Ray node mount at the same absolute path.'
    if (probe.status === 'not-seen') return {status: 'fail', message: `${plan.file} is not visible inside a container at the same path: ${probe.reason}`, file: plan.file, hint, evidence}
    if (probe.size !== plan.stat.size) {
      return {status: 'fail', message: `inside a container ${plan.file} has ${probe.size} bytes, on this host ${plan.stat.size}`, file: plan.file, hint, evidence}
    }
    return {status: 'pass', message: `visible inside a container at ${plan.file} with the same ${probe.size} bytes (image: ${image.why})`, evidence}
  },
}

/** The probe could not run `wc` in that image at all (not there), which says nothing about the data. */
function cannotRunWc(probe: ProbeOutcome): boolean {
  return probe.status === 'not-seen' && /executable file not found|exec format error|no such file or directory: unknown|wc -c exited 12[67]/i.test(probe.reason)
}

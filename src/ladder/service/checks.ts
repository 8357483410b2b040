/**
 * The service rung: the container is the recipe's own, fresh and running; /readyz
 * reports the pinned commit, a healthy janitor and no trials on a fresh epoch; the recipe's
 * verifier tells right from wrong against the real resources server; a Gym HTTP 500 leaves a
 * traceback in the container's logs.
 */
import {setTimeout as sleep} from 'node:timers/promises'
import {createHash} from 'node:crypto'
import {promises as fsp} from 'node:fs'
import path from 'node:path'

import {containerLogChunks, containerLogTail, execInContainer, imageIdOf, inspectContainer} from '../../runtime/container.js'
import {OWNERSHIP_LABEL} from '../../runtime/docker.js'
import {lastGatewayUse} from '../../runtime/gateway-ledger.js'
import {httpRequest, objectFields, readyz} from '../../runtime/http.js'
import {listeningSockets, loopbackOnly} from '../../runtime/net.js'
import {commitExists, fileSha256, fileSha256AtCommit, hasGit} from '../../runtime/git-tree.js'
import {environmentPorts} from '../../contract/types.js'
import {verbatim} from '../../json-document.js'
import type {Check, CheckOutcome, NamedResult} from '../types.js'
import {dockerFor, runningService, service} from './context.js'
import {messageOf} from '../../errors.js'


const short = (id: string | undefined) => (id ?? '').replace(/^sha256:/, '').slice(0, 12)

// ------------------------------------------------------------------ 1. the container

export const containerCheck: Check = {
  id: 'service.container',
  title: 'the service container is this recipe\'s, fresh and running',
  async run(ctx) {
    const desc = await service(ctx)
    const {docker, problem} = await dockerFor(ctx)
    if (!docker) return {status: 'fail', message: problem!.message, hint: problem!.hint}
    if (!desc.container) {
      return {status: 'skip', message: 'container name unknown: no recipe.yaml and the start script names no container', hint: 'Record the recipe with `gymrecipe new` or set CONTAINER=<name> in the start script.'}
    }
    const c = await inspectContainer(docker, desc.container)
    if (!c) {
      return [{id: 'service.container-exists', title: `container ${desc.container} exists`, status: 'fail', message: `no container named ${desc.container} (name from ${desc.containerSource})`, hint: `Start it: gymrecipe start ${desc.recipe}`}]
    }
    const out: NamedResult[] = []
    const evidence = {id: c.id, image: c.imageRef, image_id: c.imageId, status: c.status, started_at: c.startedAt, labels: {[OWNERSHIP_LABEL]: c.owner ?? null}}
    out.push({id: 'service.container-exists', title: `container ${desc.container} exists`, status: 'pass', message: `${short(c.id)} (name from ${desc.containerSource})`, evidence})

    // Owned: only this recipe's label makes the container ours.
    out.push(c.owner === desc.recipe
      ? {id: 'service.container-owned', title: `labelled ${OWNERSHIP_LABEL}=${desc.recipe}`, status: 'pass', message: `${OWNERSHIP_LABEL}=${c.owner}`}
      : {
          id: 'service.container-owned',
          title: `labelled ${OWNERSHIP_LABEL}=${desc.recipe}`,
          status: 'fail',
          message: `${desc.container} carries ${OWNERSHIP_LABEL}=${c.owner ?? '<unset>'}: it is not this recipe's container`,
          hint: 'Someone else owns it; gymrecipe will not touch it. Use another container name or ask its owner.',
          evidence,
        })

    // Running and not restarting.
    if (!c.running || c.restarting) {
      const tail = await containerLogTail(docker, c.id, 20).catch(() => [])
      out.push({
        id: 'service.container-running',
        title: 'running, not restarting',
        status: 'fail',
        message: c.restarting
          ? `${desc.container} is restarting (restart count ${c.restartCount})`
          : `${desc.container} is ${c.status} (exit code ${c.exitCode}${c.oomKilled ? ', OOM-killed' : ''}, finished ${c.finishedAt})`,
        hint: `Read its logs (gymrecipe logs ${desc.recipe}), fix the cause, then gymrecipe start ${desc.recipe}.`,
        evidence: {...evidence, last_log_lines: tail},
      })
    } else if (c.restartCount > 0) {
      out.push({id: 'service.container-running', title: 'running, not restarting', status: 'fail', message: `${desc.container} runs but restarted ${c.restartCount} time(s): its process crashed at least once`, hint: `gymrecipe logs ${desc.recipe}`, evidence})
    } else {
      out.push({id: 'service.container-running', title: 'running, not restarting', status: 'pass', message: `running since ${c.startedAt}, no restarts`})
    }

    // Fresh: created from the image the tag points to now (a reused tag never updates a container).
    const tag = desc.imageTag
    if (!tag) {
      out.push({id: 'service.container-fresh', title: 'created from the current image', status: 'skip', message: 'the image tag is unknown (NEMO_GYM_IMAGE unset in env.sh)', hint: 'Export NEMO_GYM_IMAGE in env.sh.'})
      return out
    }
    const current = await imageIdOf(docker, tag)
    const built = ctx.handoff?.start?.builtImageId
    const fresh: CheckOutcome = !current
      ? {status: 'fail', message: `image ${tag} does not exist any more; the container runs ${short(c.imageId)}`, hint: `gymrecipe start ${desc.recipe} rebuilds it and recreates the container.`}
      : c.imageRef !== tag
        ? {status: 'fail', message: `${desc.container} was created from ${c.imageRef}, but the recipe builds ${tag}`, hint: `gymrecipe start ${desc.recipe}`}
        : c.imageId !== current
          ? {
              status: 'fail',
              message: `stale container: it runs image ${short(c.imageId)}, but ${tag} now points to ${short(current)} (a reused tag never updates a running container)`,
              hint: `Recreate it from the current image: gymrecipe start ${desc.recipe}`,
            }
          : built && built !== current
            ? {status: 'fail', message: `${tag} points to ${short(current)}, not the image this start just built (${short(built)})`, hint: 'Another build retagged the image meanwhile; run start again.'}
            : {status: 'pass', message: `${tag} = ${short(current)}${built ? ', built by this start' : ''}`}
    out.push({id: 'service.container-fresh', title: 'created from the current image', ...fresh, evidence: {tag, tag_image_id: current ?? null, container_image_id: c.imageId}})

    // The recipe files baked into the image are the checkout's (the image holds the scripts it runs).
    if (fresh.status === 'pass' && c.running) out.push(await bakedFiles(ctx, docker, c.id, desc.recipeDirInImage))
    return out
  },
}

/** sha256 of files inside the running container, by path (absent and unreadable files left out). */
async function sha256InContainer(docker: import('dockerode'), id: string, files: string[]): Promise<{hashes: Map<string, string>; error?: string}> {
  const hashes = new Map<string, string>()
  let error: string | undefined
  for (let at = 0; at < files.length; at += 100) {
    const r = await execInContainer(docker, id, ['sha256sum', '--', ...files.slice(at, at + 100)], {timeoutMs: 60_000})
    for (const line of r.stdout.split('\n')) {
      const m = line.match(/^([0-9a-f]{64})\s+\*?(.+)$/)
      if (m) hashes.set(m[2], m[1])
    }
    if (hashes.size === 0 && r.exitCode !== 0) error = (r.stderr.trim() || `exit ${r.exitCode}`).split('\n')[0]
  }
  return {hashes, error}
}

/** Files under a folder of the checkout, relative to it (sorted; bounded, caches and venvs left out). */
async function filesUnder(root: string, dir: string, limit = 400): Promise<string[]> {
  const out: string[] = []
  const skip = new Set(['__pycache__', '.venv', 'fixture_gym_root', 'node_modules', '.git'])
  const walk = async (rel: string) => {
    const entries = await fsp.readdir(path.join(root, rel), {withFileTypes: true}).catch(() => [])
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (out.length >= limit || skip.has(entry.name)) continue
      const child = rel ? `${rel}/${entry.name}` : entry.name
      if (entry.isDirectory()) await walk(child)
      else if (entry.isFile()) out.push(child)
    }
  }
  await walk(dir)
  return out
}

const SERVICE_DIR = 'examples/nemo_gym_agentic/service'

/**
 * The image holds the checkout's recipe scripts and its service: the Dockerfile it was built from,
 * the patches applied to Gym, and the Gateway code (a reused image tag says nothing about them).
 */
async function bakedFiles(ctx: Parameters<Check['run']>[0], docker: import('dockerode'), id: string, dirInImage: string): Promise<NamedResult> {
  const title = "the image holds the checkout's recipe scripts, Dockerfile, patches and Gateway code"
  const relax = ctx.target.relaxRoot
  const integrationInImage = dirInImage.slice(0, dirInImage.length - path.relative(path.join(relax, 'examples', 'nemo_gym_agentic'), ctx.target.dir).length - 1)
  const recipeFiles = [ctx.target.files.start, ctx.target.files.verify].filter((n): n is string => Boolean(n))
  const pairs: Array<{shown: string; local: string; image: string}> = [
    ...recipeFiles.map((name) => ({shown: name, local: path.join(ctx.target.dir, name), image: `${dirInImage}/${name}`})),
    ...(await filesUnder(relax, SERVICE_DIR)).map((rel) => ({shown: rel.slice('examples/nemo_gym_agentic/'.length), local: path.join(relax, rel), image: `${integrationInImage}/${rel.slice('examples/nemo_gym_agentic/'.length)}`})),
  ]
  const local = new Map<string, string>()
  for (const pair of pairs) {
    const data = await fsp.readFile(pair.local).catch(() => undefined)
    if (data) local.set(pair.image, createHash('sha256').update(data).digest('hex'))
  }
  const {hashes, error} = await sha256InContainer(docker, id, [...local.keys()])
  if (hashes.size === 0) return {id: 'service.image-files', title, status: 'skip', message: `could not read ${dirInImage} in the container: ${error ?? 'no file'}`}
  const differ = pairs.filter((p) => local.has(p.image) && hashes.get(p.image) !== local.get(p.image)).map((p) => p.shown)
  const evidence = {compared: pairs.filter((p) => local.has(p.image)).map((p) => p.shown)}
  if (differ.length > 0) {
    const shown = differ.slice(0, 8).join(', ') + (differ.length > 8 ? `, and ${differ.length - 8} more` : '')
    return {id: 'service.image-files', title, status: 'fail', message: `${shown} changed since the image was built (or the image lacks them)`, hint: `Rebuild and recreate: gymrecipe start ${ctx.target.id}`, evidence: {...evidence, differ}}
  }
  const service = evidence.compared.length - recipeFiles.length
  return {id: 'service.image-files', title, status: 'pass', message: `${recipeFiles.join(', ')} and ${service} file(s) of service/ (Dockerfile, patches, Gateway code) match the image`, evidence}
}

// ------------------------------------------------------------------ 1b. the Gym tree in the image

/** Files that identify a Gym tree: its packaging and lock, the config parser, and the recipe's own configs. */
const GYM_FINGERPRINT = ['pyproject.toml', 'uv.lock', 'nemo_gym/global_config.py', 'nemo_gym/server_utils.py', 'nemo_gym/cli/env.py']

/** Files the checkout's patches change: they differ from the pinned commit in the image on purpose. */
async function patchedFiles(relaxRoot: string): Promise<Set<string>> {
  const dir = path.join(relaxRoot, SERVICE_DIR, 'patches')
  const names = (await fsp.readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith('.patch'))
  const out = new Set<string>()
  for (const name of names) {
    const text = await fsp.readFile(path.join(dir, name), 'utf8').catch(() => '')
    for (const m of text.matchAll(/^\+\+\+ (?:b\/)?(\S+)/gm)) out.add(m[1])
  }
  return out
}

export const gymTreeCheck: Check = {
  id: 'service.gym-tree',
  title: 'the Gym tree in the image is the pinned commit',
  async run(ctx) {
    const found = await runningService(ctx)
    if ('problem' in found) return {status: 'fail', ...found.problem}
    const {docker, container} = found.ok
    const commit = ctx.target.contract?.gym.commit
    if (!commit) return {status: 'skip', message: 'not checked: no recipe.yaml records the pinned Gym commit'}
    const gymRoot = ctx.options.gymRoot
    if (!gymRoot) {
      return {
        status: 'skip',
        message: `not checked: /readyz gym_commit is the image's build argument, not read from the tree; proving that the tree is ${commit.slice(0, 12)} needs a Gym checkout to compare with`,
        hint: 'Pass --gym-root <Gym checkout> (or set GYMRECIPE_GYM_ROOT); with its .git the pinned commit\'s own files are compared.',
      }
    }
    const withGit = (await hasGit(gymRoot)) && (await commitExists(gymRoot, commit))
    if ((await hasGit(gymRoot)) && !withGit) {
      return {status: 'fail', message: `the pinned commit ${commit} is not in the history of ${gymRoot}`, hint: 'Fetch it (git fetch origin <commit>) or point --gym-root at the checkout the image was built from.'}
    }
    const patched = await patchedFiles(ctx.target.relaxRoot)
    const candidates = [...new Set([...GYM_FINGERPRINT, ...(ctx.target.contract?.gym.config_paths ?? [])])].filter((f) => !patched.has(f))
    const expected = new Map<string, string>()
    for (const file of candidates) {
      const hash = withGit ? await fileSha256AtCommit(gymRoot, commit, file) : await fileSha256(gymRoot, file)
      if (hash) expected.set(file, hash)
    }
    const how = withGit ? `the pinned commit's files, read from ${gymRoot}/.git` : `the files of ${gymRoot} (no .git there: which commit they are is not known)`
    if (expected.size === 0) return {status: 'skip', message: `not checked: none of ${candidates.join(', ')} is in ${how}`}
    const {hashes, error} = await sha256InContainer(docker, container.id, [...expected.keys()].map((f) => `${GYM_ROOT_IN_IMAGE}/${f}`))
    if (hashes.size === 0) return {status: 'skip', message: `not checked: the Gym tree could not be read in the container (${error ?? 'no file'})`}
    const differ = [...expected.keys()].filter((f) => hashes.get(`${GYM_ROOT_IN_IMAGE}/${f}`) !== expected.get(f))
    const evidence = {method: withGit ? 'git' : 'files', gym_root: gymRoot, compared: [...expected.keys()], patched_left_out: [...patched]}
    if (differ.length > 0) {
      return {
        status: 'fail',
        message: `the Gym tree in the image is not ${withGit ? commit.slice(0, 12) : `the one at ${gymRoot}`}: ${differ.join(', ')} differ${withGit ? ` from ${commit.slice(0, 12)}` : ''} (compared with ${how})`,
        hint: 'Rebuild the image with NEMO_GYM_COMMIT set to the pinned commit (gymrecipe start rebuilds it).',
        evidence: {...evidence, differ},
      }
    }
    return {status: 'pass', message: `${expected.size} file(s) of the Gym tree in the image (${[...expected.keys()].join(', ')}) match ${how}${patched.size > 0 ? `; ${[...patched].join(', ')} left out (the checkout's patches change them)` : ''}`, evidence}
  },
}

// ------------------------------------------------------------------ 2. /readyz

export const readyzCheck: Check = {
  id: 'service.readyz',
  title: '/readyz: ready, pinned commit, healthy janitor, no trials on a fresh epoch',
  async run(ctx) {
    const found = await runningService(ctx)
    if ('problem' in found) return {status: 'fail', ...found.problem}
    const {desc, urls, container} = found.ok
    const {answer, error} = await readyz(urls.gateway, 5000)
    if (!answer) return [{id: 'service.readyz', title: 'GET /readyz answers 200 with ready: true', status: 'fail', message: `${urls.gateway}/readyz: ${error}`, hint: `Is the Gateway up? gymrecipe logs ${desc.recipe}`}]
    const body = objectFields(answer.json)
    const evidence = {url: `${urls.gateway}/readyz`, status: answer.status, body: verbatim(answer.json) ?? answer.text.slice(0, 500)}
    const out: NamedResult[] = []
    out.push(answer.status === 200 && body.ready === true
      ? {id: 'service.readyz', title: 'GET /readyz answers 200 with ready: true', status: 'pass', message: `200 ready (service_epoch ${body.service_epoch})`, evidence}
      : {
          id: 'service.readyz',
          title: 'GET /readyz answers 200 with ready: true',
          status: 'fail',
          message: `HTTP ${answer.status}, ready=${JSON.stringify(body.ready)}`,
          hint: '/readyz is 503 until every readiness URL (agent, resources server) answers and the janitor runs; read the container logs.',
          evidence,
        })
    if (!desc.commit) {
      out.push({id: 'service.gym-commit', title: 'gym_commit is the pinned commit', status: 'skip', message: `gym_commit=${body.gym_commit}, but no pinned commit is known (no recipe.yaml, none in the start script)`})
    } else {
      out.push(body.gym_commit === desc.commit
        ? {id: 'service.gym-commit', title: 'gym_commit is the pinned commit', status: 'pass', message: `${desc.commit} (${desc.commitSource})`}
        : {
            id: 'service.gym-commit',
            title: 'gym_commit is the pinned commit',
            status: 'fail',
            message: `/readyz reports gym_commit=${body.gym_commit ?? '<missing>'}, ${desc.commitSource} pins ${desc.commit}`,
            hint: 'The image was built from another NeMo Gym commit; build it with the pinned NEMO_GYM_COMMIT.',
          })
    }
    out.push(body.janitor_healthy === true
      ? {id: 'service.janitor', title: 'janitor_healthy', status: 'pass', message: 'janitor healthy'}
      : {id: 'service.janitor', title: 'janitor_healthy', status: 'fail', message: `janitor_healthy=${JSON.stringify(body.janitor_healthy)}: leases and deadlines are not being enforced`, hint: `gymrecipe logs ${desc.recipe}`})
    const trials = Number(body.trials)
    const ownUse = await lastGatewayUse(ctx.target.dir, ctx.options.env)
    const active = Number(body.active_trials)
    if (body.trials === undefined || body.active_trials === undefined) {
      out.push({id: 'service.trials', title: 'no trials on a fresh service_epoch', status: 'fail', message: '/readyz has no trials/active_trials counters'})
    } else if (active === 0 && trials !== 0 && ownUse && ownUse.serviceEpoch === body.service_epoch && trials <= ownUse.trialsAfter) {
      out.push({
        id: 'service.trials',
        title: 'no trials on a fresh service_epoch',
        status: 'pass',
        message: `trials=${trials} active_trials=0 on service_epoch ${body.service_epoch}: all from ${ownUse.by} (${ownUse.trialsAfter} recorded at ${ownUse.at}); no stale requester`,
      })
    } else if (trials !== 0 || active !== 0) {
      out.push({
        id: 'service.trials',
        title: 'no trials on a fresh service_epoch',
        status: 'fail',
        message: `trials=${trials} active_trials=${active} on service_epoch ${body.service_epoch} (container started ${container.startedAt}): a stale requester is still submitting to this Gateway`,
        hint: `Stop the old Relax job/client first (find it: docker logs ${desc.container} 2>&1 | grep 'POST /v1/trials'), then gymrecipe start ${desc.recipe}.`,
        evidence: {service_epoch: body.service_epoch, trials, active_trials: active, terminal_trials: body.terminal_trials},
      })
    } else {
      out.push({id: 'service.trials', title: 'no trials on a fresh service_epoch', status: 'pass', message: `trials=0 active_trials=0 on service_epoch ${body.service_epoch}`})
    }
    return out
  },
}

// ------------------------------------------------------------------ 3. the recipe's verifier

const NUMBER = '(-?\\d+(?:\\.\\d+)?(?:[eE][-+]?\\d+)?|nan|None|null)'

/** Parse `correct_reward=X incorrect_reward=Y` (or `equivalent_reward=`) from a direct verifier's output. */
export function parseVerifierOutput(text: string): {correct?: number; incorrect?: number; passedLine?: string; golden?: number} {
  const correct = text.match(new RegExp(`\\b(?:correct|equivalent)_reward=${NUMBER}`))
  const incorrect = text.match(new RegExp(`\\bincorrect_reward=${NUMBER}`))
  const golden = text.match(new RegExp(`golden verification passed:.*\\breward=${NUMBER}`))
  const passedLine = text.split('\n').find((l) => /\bpassed:/.test(l))
  const num = (m: RegExpMatchArray | null) => (m ? Number(m[1]) : undefined)
  return {correct: num(correct), incorrect: num(incorrect), golden: num(golden), passedLine}
}

/** One run of the recipe's verifier script in the container: its rewards, evidence, and a non-zero exit as a problem. */
async function runVerifierScript(docker: Parameters<typeof execInContainer>[0], containerId: string, cmd: string[]) {
  const r = await execInContainer(docker, containerId, cmd, {timeoutMs: 180_000})
  const parsed = parseVerifierOutput(`${r.stdout}\n${r.stderr}`)
  const evidence = {command: cmd.join(' '), exit_code: r.exitCode, stdout: r.stdout.trim().slice(-2000), stderr: r.stderr.trim().slice(-2000), ...parsed}
  const lastLine = (r.stderr.trim() || r.stdout.trim()).split('\n').at(-1) ?? ''
  const exitProblem = r.exitCode !== 0 ? [`exit code ${r.exitCode}${lastLine ? `: ${lastLine}` : ''}`] : []
  return {r, parsed, evidence, lastLine, exitProblem}
}

/** What a direct verifier's rewards say is wrong: the correct one short of success, the wrong one not failing. */
function directVerdictProblems(parsed: ReturnType<typeof parseVerifierOutput>, successReward: number, failureReward: number | undefined): string[] {
  if (parsed.correct === undefined || parsed.incorrect === undefined) return ['no `correct_reward=… incorrect_reward=…` line in its output']
  const problems: string[] = []
  if (parsed.correct !== successReward) problems.push(`the known-correct response got ${parsed.correct}, not the success reward ${successReward}`)
  if (parsed.incorrect === successReward) problems.push(`the known-wrong response also got the success reward ${successReward}: the verifier cannot tell right from wrong`)
  else if (failureReward !== undefined && parsed.incorrect !== failureReward) problems.push(`the known-wrong response got ${parsed.incorrect}, not the grader's failure reward ${failureReward}`)
  return problems
}

export const verifierCheck: Check = {
  id: 'service.verifier',
  title: 'the recipe verifier: known-correct earns the success reward, known-wrong does not',
  async run(ctx) {
    // A pending verifier fails whether or not the service runs: no example exists to run.
    const pending = (await service(ctx)).verifier
    if (pending?.kind === 'pending') {
      return {status: 'fail', message: `no known-correct and known-wrong outputs yet: ${pending.pending ?? 'recipe.yaml records the verifier as pending'}`, hint: `Give them, then: gymrecipe new ${ctx.target.id} --update --verifier <file.yaml>`, file: 'recipe.yaml'}
    }
    const found = await runningService(ctx)
    if ('problem' in found) return {status: 'fail', ...found.problem}
    const {docker, desc, container, urls} = found.ok
    const v = desc.verifier
    if (!v) {
      return {status: 'skip', message: `not checked: which Python runs ${ctx.target.files.verify ?? 'the verifier'} is unknown (no recipe.yaml, no /opt/nemo-gym/.../.venv/bin/python named in the verifier or README)`, hint: 'Record the recipe with `gymrecipe new` (verifier.python).'}
    }
    const cmd = [v.python, v.script, ...v.args(urls)]
    const {r, parsed, evidence, lastLine, exitProblem} = await runVerifierScript(docker, container.id, cmd)
    if (r.timedOut) return {status: 'fail', message: `${cmd.join(' ')} did not finish within 180 s`, evidence}
    if (v.kind === 'golden') {
      if (r.exitCode === 0 && parsed.golden === v.successReward) return {status: 'pass', message: `${parsed.passedLine?.trim()} (golden trial; there is no known-wrong case in golden mode)`, evidence}
      return {status: 'fail', message: `golden verifier exit ${r.exitCode}: ${lastLine}`, hint: 'Read the verifier output and the container logs.', evidence}
    }
    const problems = [...exitProblem, ...directVerdictProblems(parsed, v.successReward, v.failureReward)]
    if (problems.length > 0) {
      return {status: 'fail', message: `${path.basename(v.script)} in ${desc.container}: ${problems.join('; ')}`, hint: 'Run it by hand: docker exec <container> ' + cmd.join(' '), evidence}
    }
    return {status: 'pass', message: `correct_reward=${parsed.correct} incorrect_reward=${parsed.incorrect} (${path.basename(v.script)} with ${v.python})`, evidence}
  },
}

/**
 * A recipe with several environments: each further environment's own direct verifier, run by the
 * same script (--environment NAME) against that environment's resources server. One recorded with
 * no verifier fails: nothing would prove its grader tells right from wrong.
 */
export const environmentVerifiersCheck: Check = {
  id: 'service.verifier-environments',
  title: 'each further environment\'s verifier: known-correct earns the success reward, known-wrong does not',
  async run(ctx) {
    const others = ctx.target.contract?.gym.additional_environments ?? []
    const found = await runningService(ctx)
    if ('problem' in found) return others.map((e) => ({id: `service.verifier.${e.environment}`, title: `the ${e.environment} verifier`, status: 'fail' as const, ...found.problem}))
    const {docker, desc, container, urls} = found.ok
    const results: NamedResult[] = []
    const placed = environmentPorts({service: {gateway_port: Number(new URL(urls.gateway).port)}, gym: ctx.target.contract?.gym})
    for (const [i, e] of others.entries()) {
      const id = `service.verifier.${e.environment}`
      const title = `the ${e.environment} verifier (its own resources server)`
      const v = e.verifier
      if (!v || !desc.verifier || !e.resources_server) {
        results.push({id, title, status: 'fail', message: `recipe.yaml records no direct verifier for ${e.environment}: nothing proves its grader tells right from wrong`, hint: 'Add a verifier: block (kind: direct) to its entry under gym.additional_environments.', file: 'recipe.yaml'})
        continue
      }
      const resourceUrl = `http://${urls.gymHost}:${placed[i + 1].resource}`
      const cmd = [v.python, desc.verifier.script, '--environment', e.environment, '--resource-url', resourceUrl]
      const {r, parsed, evidence, exitProblem} = await runVerifierScript(docker, container.id, cmd)
      const problems = [...(r.timedOut ? ['did not finish within 180 s'] : exitProblem), ...directVerdictProblems(parsed, v.success_reward, v.failure_reward ?? undefined)]
      results.push(problems.length > 0
        ? {id, title, status: 'fail', message: `${path.basename(desc.verifier.script)} --environment ${e.environment}: ${problems.join('; ')}`, hint: `Run it by hand: docker exec ${desc.container} ${cmd.join(' ')}`, evidence}
        : {id, title, status: 'pass', message: `correct_reward=${parsed.correct} incorrect_reward=${parsed.incorrect} (${resourceUrl}, ${v.python})`, evidence})
    }
    return results
  },
}

// ------------------------------------------------------------------ 4. tracebacks for HTTP 500

const TRACEBACK = 'Traceback (most recent call last)'

interface LoggedTraceback {
  lines: string[]
  /** The exception line that ends it, without Gym's "(<instance id>) " prefix. */
  exception?: string
}

/** Tracebacks in a log text, each with its closing exception line. */
export function tracebacksIn(text: string): LoggedTraceback[] {
  const lines = text.split('\n')
  const out: LoggedTraceback[] = []
  lines.forEach((line, at) => {
    if (!line.includes(TRACEBACK)) return
    const rest = lines.slice(at + 1).map((l) => l.replace(/^\([\w.-]+\) ?/, ''))
    const end = rest.findIndex((l) => /^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b/.test(l))
    out.push({lines: lines.slice(at, at + 2 + (end < 0 ? 28 : end)), exception: end < 0 ? undefined : rest[end].trim()})
  })
  return out
}

/**
 * A model callback cancelled at abort logs an asyncio.CancelledError traceback in the Gateway,
 * and Gym's middleware "RuntimeError: No response returned." (twice per abort): that is the abort
 * working, not a Gym 500.
 */
function isCancellation(t: LoggedTraceback): boolean {
  return /\bCancelledError\b|^RuntimeError: No response returned\.$/.test(t.exception ?? '')
}

/** The first traceback in a log that is evidence of an HTTP 500 (abort cancellations are not). */
export function serverErrorTraceback(text: string): LoggedTraceback | undefined {
  return tracebacksIn(text).find((t) => !isCancellation(t))
}

/** Relax's patch that makes a failed inner-server call print its traceback, and what it changes. */
const TRACEBACK_PATCH = 'examples/nemo_gym_agentic/service/patches/nemo_gym_http_error_traceback.patch'
const TRACEBACK_PATCH_FILE = 'nemo_gym/server_utils.py'
const TRACEBACK_PATCH_LINE = 'print(format_exc(), flush=True)'
const GYM_ROOT_IN_IMAGE = '/opt/nemo-gym'

/** The file a patch changes and the lines it adds (from the checkout's patch, else the known line). */
async function tracebackPatchLines(relaxRoot: string): Promise<{file: string; lines: string[]; from: string}> {
  const text = await fsp.readFile(path.join(relaxRoot, TRACEBACK_PATCH), 'utf8').catch(() => undefined)
  const file = text ? /^\+\+\+ (?:b\/)?(\S+)/m.exec(text)?.[1] : undefined
  const added = text ? text.split('\n').filter((l) => l.startsWith('+') && !l.startsWith('+++')).map((l) => l.slice(1).trim()).filter(Boolean) : []
  if (file && added.length > 0) return {file, lines: added, from: TRACEBACK_PATCH}
  return {file: TRACEBACK_PATCH_FILE, lines: [TRACEBACK_PATCH_LINE], from: `the line the patch adds (${TRACEBACK_PATCH} is not in this checkout)`}
}

/**
 * Whether the Gym tree baked into the image carries Relax's traceback patch, read from the patched
 * file inside the running container: stock Gym prints a traceback for some 500s (its validation
 * handler's) but not for a failed inner-server call, which is what the patch is for.
 */
async function patchInImage(docker: Parameters<typeof execInContainer>[0], containerId: string, relaxRoot: string): Promise<{ok: boolean; said: string; evidence: Record<string, unknown>}> {
  const patch = await tracebackPatchLines(relaxRoot)
  const inImage = `${GYM_ROOT_IN_IMAGE}/${patch.file}`
  const read = await execInContainer(docker, containerId, ['cat', '--', inImage], {timeoutMs: 30_000})
  const evidence = {file_in_image: inImage, patch_lines: patch.lines, from: patch.from}
  if (read.exitCode !== 0) return {ok: false, said: `${inImage} cannot be read in the image (${(read.stderr.trim() || `exit ${read.exitCode}`).split('\n')[0]})`, evidence}
  const present = read.stdout.split('\n').map((l) => l.trim())
  const missing = patch.lines.filter((line) => !present.includes(line))
  if (missing.length > 0) {
    return {ok: false, said: `${inImage} in the image lacks ${missing.length} of the ${patch.lines.length} line(s) Relax's traceback patch adds (${missing.slice(0, 2).join(' | ')}): the image was built without nemo_gym_http_error_traceback.patch, so a failed inner-server call is a silent 500`, evidence: {...evidence, missing}}
  }
  return {ok: true, said: `Relax's traceback patch is in the image (verified in the image, not provoked: the ${patch.lines.length} line(s) it adds are in ${inImage})`, evidence}
}

export const tracebackCheck: Check = {
  id: 'service.traceback',
  title: "Relax's traceback patch is in the image, and a Gym HTTP 500 leaves a traceback in the container logs",
  async run(ctx) {
    const found = await runningService(ctx)
    if ('problem' in found) return {status: 'fail', ...found.problem}
    const {docker, desc, container, urls} = found.ok
    const patched = await patchInImage(docker, container.id, ctx.target.relaxRoot)
    if (!patched.ok) {
      return {
        status: 'fail',
        message: patched.said,
        hint: 'Rebuild the image from a Dockerfile that applies examples/nemo_gym_agentic/service/patches/ (gymrecipe start rebuilds it); stock Gym prints a traceback for its own validation errors, so a traceback in the logs alone does not prove the patch.',
        evidence: patched.evidence,
      }
    }
    const probe = desc.errorProbe
    const base = probe.server === 'resource' ? urls.resource : urls.agent
    if (!base) return {status: 'skip', message: `not checked: no ${probe.server} URL is known for this recipe, so the error probe cannot be sent`, hint: 'Record the recipe with `gymrecipe new` (service.error_probe).'}
    const target = `${base.replace(/\/$/, '')}${probe.path}`
    const request = `POST ${target} (Content-Type: ${probe.content_type})`
    const since = Date.now() / 1000 - 0.05
    let answer: {status: number; text: string}
    try {
      answer = await httpRequest('POST', target, {body: probe.body, headers: {'content-type': probe.content_type}, timeoutMs: 30_000})
    } catch (error) {
      return {status: 'fail', message: `${patched.said}, but ${request} failed: ${messageOf(error)}`, hint: `gymrecipe logs ${desc.recipe}`}
    }
    if (answer.status === 422) {
      return {
        status: 'skip',
        message: `${patched.said}; the logs not checked: ${request} was answered 422, a request validation error: Gym refused the probe before any handler ran, so there was no 500 to trace`,
        hint: 'Record a request the pinned Gym answers 500 as service.error_probe in recipe.yaml (a JSON body sent as text/plain does at the pinned commit).',
        evidence: {status: 422, body: answer.text.slice(0, 500)},
      }
    }
    if (answer.status !== 500) {
      return {status: 'skip', message: `${patched.said}; the logs not checked: ${request} was answered HTTP ${answer.status}, not 500, so there was no 500 to trace`, hint: 'Record a request the pinned Gym answers 500 as service.error_probe in recipe.yaml.', evidence: {status: answer.status, body: answer.text.slice(0, 500)}}
    }
    // stdout and stderr from the moment of the request: Gym prints tracebacks to stdout,
    // uvicorn to stderr.
    let found500: LoggedTraceback | undefined
    let logs: string
    const deadline = Date.now() + 5000
    for (;;) {
      logs = (await containerLogChunks(docker, container.id, {sinceSeconds: since})).map((c) => c.text).join('')
      found500 = serverErrorTraceback(logs)
      if (found500 || Date.now() > deadline) break
      await sleep(200)
    }
    if (!found500) {
      return {
        status: 'fail',
        message: `${patched.said}, but ${request} answered HTTP 500 and no traceback reached the container logs within 5 s`,
        hint: 'Gym prints tracebacks to stdout; check that the start script does not redirect or drop the servers\' output (Calendar PITFAIL #13).',
        evidence: {logs_after_request: logs.split('\n').slice(-40)},
      }
    }
    return {status: 'pass', message: `${patched.said}; HTTP 500 from ${request} → traceback in the logs${found500.exception ? ` (${found500.exception})` : ''}`, evidence: {...patched.evidence, traceback: found500.lines}}
  },
}

// ------------------------------------------------------------------ 5. the private Ray stays private

/** Ray's own processes in the container (GCS, raylet): whether any of them runs with token auth. */
const RAY_AUTH_PROBE = [
  'sh', '-c',
  'found=1; for p in /proc/[0-9]*; do case "$(tr "\\000" " " < "$p/cmdline" 2>/dev/null)" in *gcs_server*|*raylet*) found=0; tr "\\000" "\\n" < "$p/environ" 2>/dev/null | grep -qx "RAY_AUTH_MODE=token" && exit 0;; esac; done; exit $((2 + found))',
]

/**
 * The Ray ports reachable from the network, named ports (the GCS, the dashboard) first and workers after,
 * each in port order: the ports a reader recognises lead the message, and the order never depends on the socket table.
 */
export function openToNetwork<L extends {address: string; port: number}>(listening: L[], labels: Map<number, string>): L[] {
  return listening.filter((l) => !loopbackOnly(l.address)).sort((a, b) => Number(labels.has(b.port)) - Number(labels.has(a.port)) || a.port - b.port)
}

/** "0.0.0.0 (every interface):24118 (private Ray GCS), …": the first six, then how many more. */
export function describeOpenPorts(open: {address: string; port: number}[], labels: Map<number, string>): string {
  const where = (l: {address: string; port: number}) => `${l.address === '0.0.0.0' || l.address === '::' ? `${l.address} (every interface)` : l.address}:${l.port} (${labels.get(l.port) ?? 'Ray worker'})`
  return open.slice(0, 6).map(where).join(', ') + (open.length > 6 ? `, and ${open.length - 6} more` : '')
}

export const privateRayCheck: Check = {
  id: 'service.private-ray',
  title: 'the private Ray of the Gym container is not open to the network',
  async run(ctx) {
    const found = await runningService(ctx)
    if ('problem' in found) return {status: 'fail', ...found.problem}
    const {docker, container} = found.ok
    const contract = ctx.target.contract
    if (!contract) return {status: 'skip', message: 'not checked: the private Ray ports are only known from recipe.yaml'}
    const labels = new Map<number, string>(found.ok.desc.ports.filter((p) => /Ray/.test(p.label)).map((p) => [p.port, p.label]))
    const isRayPort = (port: number) => labels.has(port) || (port >= contract.ray.min_worker_port && port <= contract.ray.max_worker_port)
    // The container shares the host's network: its socket table is the host's. Nothing is sent.
    const sockets = await execInContainer(docker, container.id, ['cat', '/proc/net/tcp', '/proc/net/tcp6'], {timeoutMs: 30_000})
    if (sockets.exitCode !== 0) return {status: 'skip', message: `not checked: the socket table could not be read in the container (${(sockets.stderr.trim() || `exit ${sockets.exitCode}`).split('\n')[0]})`}
    const listening = listeningSockets(sockets.stdout).filter((l) => isRayPort(l.port))
    const open = openToNetwork(listening, labels)
    const probe = await execInContainer(docker, container.id, RAY_AUTH_PROBE, {timeoutMs: 30_000})
    const tokenAuth = probe.exitCode === 0
    const rayFound = probe.exitCode === 0 || probe.exitCode === 2
    const shown = describeOpenPorts(open, labels)
    const evidence = {listening, open, token_auth: tokenAuth, ray_processes_found: rayFound}
    if (open.length === 0) {
      const what = listening.length > 0 ? `its ${listening.length} listening port(s) are on loopback only` : 'none of its ports is listening'
      return {status: 'pass', message: `the private Ray is not reachable from the network: ${what}${tokenAuth ? '; Ray token auth is on' : ''}`, evidence}
    }
    if (tokenAuth) {
      return {
        status: 'pass',
        message: `listening for the network: ${shown}; every connection needs the token the container made (RAY_AUTH_MODE=token): Ray listens on every interface whatever its node address`,
        hint: 'To close them too, firewall these ports to everything but loopback on the Gym host.',
        evidence,
      }
    }
    return {
      status: 'fail',
      message: `the private Ray accepts connections from the network without authentication: ${shown}${rayFound ? '' : ' (no Ray process was found in the container to read its auth mode)'}; anyone who reaches this host can run work inside the Gym container`,
      hint: 'Regenerate the start script (gymrecipe new --update): it starts the private Ray on 127.0.0.1 with Ray token authentication (RAY_AUTH_MODE=token); or firewall these ports.',
      evidence,
    }
  },
}

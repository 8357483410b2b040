import {promises as fsp} from 'node:fs'
import path from 'node:path'
import type {Writable} from 'node:stream'

import {ExitCode, GymError, preconditionError} from '../errors.js'
import {checkContext, previewPathOf, RUNG_DEFINITIONS, runLadder, type LadderPrinter, type LadderReport, type Rung} from '../ladder/index.js'
import {resolveRecipe} from '../recipe/target.js'
import type {RecipeTarget} from '../recipe/types.js'
import {which} from '../runtime/process.js'
import {scriptEnvironment} from '../runtime/recipe-env.js'
import {chooseDockerBuilder, type DockerBuilder} from '../runtime/docker-builder.js'
import {runScript, type ScriptRun} from '../runtime/script.js'
import {shellWord} from '../shell-words.js'
import {assertGymRoot} from '../contract/gym-config/paths.js'

/** Step 1 of 3: run the recipe's prepare script, then prove the result on the static and data rungs. */
export const PREPARE_LEVEL: Rung = 'data'

export interface PrepareOptions {
  relaxRoot: string
  recipe: string
  dryRun: boolean
  /** Accept a non-training split for a smoke run; every report says so. */
  smoke: boolean
  gymRoot?: string
  env: NodeJS.ProcessEnv
  /** Where the ladder's lines go (absent: nothing printed). */
  printer?: LadderPrinter
  /** Where the script's output goes, live. */
  stdout: Writable
  stderr: Writable
  /** A line for people between the script and the ladder (e.g. how long the script took). */
  note?: (line: string) => void
  signal?: AbortSignal
}

export type PrepareStatus = 'planned' | 'pass' | 'fail' | 'script-failed' | 'interrupted'

export interface PrepareResult {
  recipe: string
  dir: string
  status: PrepareStatus
  dryRun: boolean
  /** The exact command, run with cwd = the Relax root. */
  command: string[]
  cwd: string
  /** NEMO_GYM_SOURCE_DATA and NEMO_GYM_IMAGE as env.sh sets them. */
  source: string | null
  preview: string | null
  image: string | null
  smoke: boolean
  /** Rungs climbed after the script: static → data. */
  level: Rung
  script?: {exitCode: number | null; signal: string | null; durationMs: number; stdoutTail: string[]; stderrTail: string[]}
  hint?: string
  ladder?: LadderReport
  /** env.sh was sourced with bash to read its values (its commands ran, even in a dry run). */
  envShSourced: boolean
  /** The builder the script's docker build uses: BuildKit where docker has buildx, else the legacy one, or the caller's DOCKER_BUILDKIT. */
  dockerBuilder: DockerBuilder
}

export async function prepareRecipe(o: PrepareOptions): Promise<PrepareResult> {
  await assertGymRoot(o.gymRoot)
  const target = await resolveRecipe(o.relaxRoot, o.recipe)
  const script = await prepareScript(target)
  const bash = await which('bash', o.env.PATH ?? process.env.PATH)
  if (!bash) throw preconditionError('E_NO_BASH', 'bash is not on PATH', 'Install bash: the generated scripts are bash scripts.')
  // env.sh is gitignored in Relax, so a fresh checkout may lack it; the script then reads the environment.
  const hasEnvSh = await fsp.access(path.join(target.dir, 'env.sh')).then(() => true, () => false)
  const scriptEnv = hasEnvSh ? await scriptEnvironment(target.dir, o.env) : o.env
  const source = scriptEnv.NEMO_GYM_SOURCE_DATA || null
  const builder = await chooseDockerBuilder(o.env)
  const result: PrepareResult = {
    recipe: target.id,
    dir: target.dir,
    status: 'planned',
    dryRun: o.dryRun,
    command: [bash, path.relative(target.relaxRoot, script)],
    cwd: target.relaxRoot,
    source,
    preview: source ? previewPathOf(source) : null,
    image: scriptEnv.NEMO_GYM_IMAGE || null,
    smoke: o.smoke || (target.contract?.data.smoke ?? false),
    level: PREPARE_LEVEL,
    envShSourced: hasEnvSh,
    dockerBuilder: builder.builder,
  }
  if (o.dryRun) return result

  // The script sources env.sh itself; it gets the caller's environment, plus the builder choice.
  o.note?.(builder.note)
  const started = Date.now()
  const run = runScript(script, {cwd: target.relaxRoot, env: {...o.env, ...builder.env}, onOutput: (stream, text) => (stream === 'stdout' ? o.stdout : o.stderr).write(text)})
  const {exit, interrupted} = await waitOrStop(run, o.signal)
  const stdoutTail = run.tail('stdout', TAIL_LINES)
  const stderrTail = run.tail('stderr', TAIL_LINES)
  result.script = {exitCode: exit.exitCode ?? null, signal: exit.signal ?? null, durationMs: Date.now() - started, stdoutTail, stderrTail}
  if (interrupted) return {...result, status: 'interrupted', hint: 'Stopped on request; the script publishes atomically, so the data is either the previous version or complete. Rerun `gymrecipe prepare` when ready.'}
  if (exit.exitCode !== 0) return {...result, status: 'script-failed', hint: scriptFailureHint([...stdoutTail, ...stderrTail], target)}
  o.note?.(`✔ ${path.basename(script)} finished in ${(result.script.durationMs / 1000).toFixed(1)}s; climbing static → ${PREPARE_LEVEL}`)

  const ladder = await runLadder(RUNG_DEFINITIONS, checkContext(target, {env: o.env, smoke: o.smoke, gymRoot: o.gymRoot, signal: o.signal}), {printer: o.printer, level: PREPARE_LEVEL})
  return {...result, status: ladder.status, smoke: ladder.smoke, ladder}
}

const TAIL_LINES = 20
/** How long the script's process group gets between SIGTERM and SIGKILL. */
const KILL_GRACE_MS = 10_000

/** Wait for the script; on abort (Ctrl+C) stop its whole process group, by its id, and only it. */
async function waitOrStop(run: ScriptRun, signal: AbortSignal | undefined): Promise<{exit: Awaited<ScriptRun['exited']>; interrupted: boolean}> {
  let stopping: Promise<void> | undefined
  const stop = () => {
    stopping = run.stop('SIGTERM', KILL_GRACE_MS)
  }
  if (signal?.aborted) stop()
  else signal?.addEventListener('abort', stop, {once: true})
  try {
    const exit = await run.exited
    // Whatever outlived bash in its group (docker CLI, python) goes too.
    if (stopping) await stopping
    return {exit, interrupted: stopping !== undefined}
  } finally {
    signal?.removeEventListener('abort', stop)
  }
}

async function prepareScript(target: RecipeTarget): Promise<string> {
  const name = target.files.prepare
  const file = name ? path.join(target.dir, name) : undefined
  if (file && (await fsp.stat(file).then((s) => s.isFile(), () => false))) return file
  throw new GymError(`no prepare script${name ? ` ${name}` : ' (prepare_<recipe>.sh)'} in ${target.dir}`, {
    code: 'E_NO_PREPARE_SCRIPT',
    exit: ExitCode.usage,
    hint: `Generate the recipe with \`gymrecipe new ${target.id}\`, or add prepare_${target.id.replaceAll('-', '_')}.sh.`,
  })
}

/** What to do about a failed prepare script, read from its last lines; the script is never retried. */
export function scriptFailureHint(tail: string[], target: RecipeTarget): string {
  const text = tail.join('\n')
  const env = path.join(target.dir, 'env.sh')
  const rules: Array<[RegExp, string]> = [
    [/NEMO_GYM_SOURCE_DATA must (end with|be an absolute)|Set NEMO_GYM_SOURCE_DATA/, `Set NEMO_GYM_SOURCE_DATA in ${env} to an absolute path on shared storage ending in the raw file name the script names.`],
    [/Set NEMO_GYM_IMAGE/, `Set NEMO_GYM_IMAGE in ${env}.`],
    [/docker is required|docker: command not found|Cannot connect to the Docker daemon|Is the docker daemon running/, 'Start the Docker daemon (or install the docker CLI) on this host and rerun; check with `gymrecipe doctor`.'],
    [/permission denied.*docker\.sock/i, 'Your user cannot reach the Docker socket: add it to the docker group or run as a user that can.'],
    [/failed to export image|unknown parent image ID/, 'The Docker build cache changed under the image build (an image was removed or another build ran at the same moment); rerun `gymrecipe prepare`.'],
    [/failed to solve|error building|The command .* returned a non-zero code|returned a non-zero code/i, 'Building NEMO_GYM_IMAGE failed: fix the Dockerfile step shown above (proxies: HTTP_PROXY/HTTPS_PROXY in the environment).'],
    [/row-count mismatch/, 'The conversion lost rows: fix convert_dataset.py or the data, then rerun.'],
    [/missing verifier field|invalid JSON|expected a JSON object|problem\(s\) in the downloaded data/, 'The downloaded rows are not usable as they are: check the dataset repo/artifact/split in recipe.yaml against the pinned Gym config.'],
    [/401|403|Unauthorized|hf_token|HF_TOKEN/i, 'The dataset download was refused: set the Hugging Face token the Gym config expects (hf_token) and rerun.'],
    [/Could not resolve|Name or service not known|timed out|Connection refused/i, 'The download could not reach its server: check the proxy settings (HTTP_PROXY/HTTPS_PROXY/NO_PROXY) and rerun.'],
    [/No space left on device/, 'The data or image disk is full: free space and rerun.'],
  ]
  for (const [pattern, hint] of rules) if (pattern.test(text)) return hint
  return `The last lines of the script's output above name the cause; fix it, then rerun gymrecipe prepare ${target.id} --relax-root ${shellWord(target.relaxRoot)} (nothing was retried).`
}

/**
 * Which builder the recipe scripts' `docker build` uses. The docker CLI (23 and later) builds with
 * BuildKit only through its buildx plugin and otherwise falls back to the legacy builder with a
 * deprecation warning; asking for BuildKit without buildx fails the build. So BuildKit is chosen
 * when buildx answers, the legacy builder otherwise, and a DOCKER_BUILDKIT the caller set is kept.
 */
import {run} from './process.js'

export type DockerBuilder = 'buildkit' | 'legacy' | 'caller'

export interface BuilderChoice {
  builder: DockerBuilder
  /** Variables to add to the script's environment. */
  env: Record<string, string>
  /** One line for people. */
  note: string
}

export async function chooseDockerBuilder(env: NodeJS.ProcessEnv): Promise<BuilderChoice> {
  if (env.DOCKER_BUILDKIT !== undefined) {
    return {builder: 'caller', env: {}, note: `docker build: DOCKER_BUILDKIT=${env.DOCKER_BUILDKIT} as set`}
  }
  const buildx = await run('docker', ['buildx', 'version'], {env, extendEnv: false, timeout: 10_000})
  if (buildx.exitCode === 0) {
    // Plain progress: one line per step, so the collapsed output and a failure's last lines read well.
    return {builder: 'buildkit', env: {DOCKER_BUILDKIT: '1', BUILDKIT_PROGRESS: 'plain'}, note: `docker build: BuildKit (${buildx.stdout.split('\n')[0].trim()})`}
  }
  return {builder: 'legacy', env: {}, note: 'docker build: the legacy builder (no docker buildx here; install the buildx plugin for BuildKit)'}
}

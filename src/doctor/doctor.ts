import {dockerTarget, dockerUnreachableHint, tryDocker, unsupportedHostMessage} from '../runtime/docker.js'
import {run, which} from '../runtime/process.js'

export interface ToolReport {
  id: string
  status: 'ok' | 'missing' | 'unusable'
  required: boolean
  path: string | null
  version: string | null
  message: string
  hint: string | null
  neededFor: string
}

interface ToolSpec {
  id: string
  binary: string
  versionArgs: string[]
  required: boolean
  neededFor: string
  hint: string
}

const TOOLS: ToolSpec[] = [
  {id: 'node', binary: 'node', versionArgs: ['--version'], required: true, neededFor: 'gymrecipe itself', hint: 'Install Node.js 22 or 24 LTS.'},
  {id: 'bash', binary: 'bash', versionArgs: ['--version'], required: true, neededFor: 'running the generated recipe scripts', hint: 'apt-get install -y bash'},
  {id: 'shellcheck', binary: 'shellcheck', versionArgs: ['--version'], required: true, neededFor: 'the static rung (lints generated shell scripts)', hint: 'apt-get install -y shellcheck'},
  {id: 'python3', binary: 'python3', versionArgs: ['--version'], required: true, neededFor: 'the static rung (py_compile of verify_<recipe>.py) and the data rung conversion check', hint: 'apt-get install -y python3'},
  {id: 'docker', binary: 'docker', versionArgs: ['--version'], required: true, neededFor: 'prepare/start scripts (docker build, run, create)', hint: 'apt-get install -y docker.io'},
  {id: 'docker-buildx', binary: 'docker', versionArgs: ['buildx', 'version'], required: false, neededFor: 'BuildKit for the scripts\' docker build (without it: the legacy builder, which Docker deprecates)', hint: 'Install the buildx plugin (Debian/Ubuntu: apt-get install -y docker-buildx, or docker-buildx-plugin from Docker\'s repository).'},
  {id: 'curl', binary: 'curl', versionArgs: ['--version'], required: true, neededFor: 'the readiness loop of the start script', hint: 'apt-get install -y curl'},
  {id: 'jq', binary: 'jq', versionArgs: ['--version'], required: true, neededFor: 'the start and training scripts', hint: 'apt-get install -y jq'},
  {id: 'git', binary: 'git', versionArgs: ['--version'], required: false, neededFor: '`gymrecipe new --update` (three-way merge with git merge-file)', hint: 'apt-get install -y git'},
  {id: 'ray', binary: 'ray', versionArgs: ['--version'], required: false, neededFor: '`gymrecipe train` (ray job submit to the Relax cluster)', hint: 'Install Ray on the submitting machine (same version as the Relax cluster), or run train from a node that has it.'},
]

function firstLine(text: string): string {
  return text.split('\n').find((l) => l.trim() !== '')?.trim() ?? ''
}

/** The line that carries the version number (shellcheck prints it on line 2). */
function versionLine(text: string): string {
  const lines = text.split('\n').map((l) => l.trim()).filter(Boolean)
  return lines.find((l) => /\d+\.\d+/.test(l)) ?? lines[0] ?? ''
}

async function checkTool(spec: ToolSpec, envPath: string): Promise<ToolReport> {
  const found = await which(spec.binary, envPath)
  if (!found) {
    return {id: spec.id, status: 'missing', required: spec.required, path: null, version: null, message: `${spec.binary} not found on PATH`, hint: spec.hint, neededFor: spec.neededFor}
  }
  const result = await run(found, spec.versionArgs, {timeout: 10_000})
  if (result.failed) {
    return {id: spec.id, status: 'unusable', required: spec.required, path: found, version: null, message: `${spec.binary} ${spec.versionArgs.join(' ')} failed: ${firstLine(result.stderr) || `exit ${result.exitCode}`}`, hint: spec.hint, neededFor: spec.neededFor}
  }
  const version = versionLine(result.stdout) || versionLine(result.stderr)
  return {id: spec.id, status: 'ok', required: spec.required, path: found, version, message: version, hint: null, neededFor: spec.neededFor}
}

async function checkDockerDaemon(env: NodeJS.ProcessEnv): Promise<ToolReport> {
  const target = dockerTarget(env)
  const docker = await tryDocker(target)
  if (!docker) {
    const message = target.unsupportedHost ? unsupportedHostMessage(target.unsupportedHost) : `no Docker daemon answers at ${target.socketPath}`
    const hint = target.unsupportedHost ? 'Unset DOCKER_HOST or set it to unix:///path/to/docker.sock of this machine.' : dockerUnreachableHint
    return {id: 'docker-daemon', status: 'missing', required: true, path: target.socketPath, version: null, message, hint, neededFor: 'start, the service rung and the shared-storage data check'}
  }
  const version = await docker.version()
  return {id: 'docker-daemon', status: 'ok', required: true, path: target.socketPath, version: `Docker Engine ${version.Version} (API ${version.ApiVersion})`, message: `Docker Engine ${version.Version}`, hint: null, neededFor: 'start, the service rung and the shared-storage data check'}
}

export interface DoctorReport {
  ok: boolean
  tools: ToolReport[]
}

export async function runDoctor(env: NodeJS.ProcessEnv = process.env): Promise<DoctorReport> {
  const envPath = env.PATH ?? ''
  const tools = await Promise.all(TOOLS.map((spec) => checkTool(spec, envPath)))
  const daemon = await checkDockerDaemon(env)
  const dockerIndex = tools.findIndex((t) => t.id === 'docker')
  tools.splice(dockerIndex + 1, 0, daemon)
  return {ok: tools.every((t) => !t.required || t.status === 'ok'), tools}
}

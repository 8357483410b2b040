/** What start is asked, what it reports, and how it speaks while it runs. */
import type {LadderPrinter, LadderReport} from '../../ladder/index.js'
import type {DockerBuilder} from '../../runtime/docker-builder.js'

export interface StartIO {
  /** Live output of the start script, as it arrives. */
  scriptOutput(stream: 'stdout' | 'stderr', text: string): void
  /** A progress line for people. */
  note(line: string): void
}

export interface StartOptions {
  relaxRoot: string
  recipe: string
  env: NodeJS.ProcessEnv
  dryRun: boolean
  /** Readiness deadline in seconds after the container starts (default: NEMO_GYM_START_TIMEOUT_S, else the contract's). */
  timeoutS?: number
  gymRoot?: string
  smoke: boolean
  /** Where the ladder's lines go (absent: nothing printed). */
  printer?: LadderPrinter
  /** Climb static → data → service after the service is ready (default true). */
  climb?: boolean
  /** Ctrl+C: stop what this run started. */
  signal?: AbortSignal
  io: StartIO
  /** /readyz poll period in ms (default 150). */
  pollMs?: number
}

export interface ContainerReport {
  name: string
  id: string | null
  image: string | null
  imageId: string | null
  /** running | exited (code N) | removed | not created | ... */
  state: string
  /** The previous container of this recipe that the script replaced, if any. */
  replaced: string | null
}

export interface StartReport {
  recipe: string
  dir: string
  dryRun: boolean
  script: {path: string; command: string[]; exitCode: number | null}
  container: ContainerReport
  gatewayUrl: string
  /** The builder the script's docker build uses: BuildKit where docker has buildx, else the legacy one, or the caller's DOCKER_BUILDKIT. */
  dockerBuilder: DockerBuilder
  readiness: null | {
    ready: boolean
    timeoutS: number
    containerStartedAt: string
    readyAt: string
    /** From the container's start to the moment start saw /readyz ready. */
    elapsedMs: number
    readyz: unknown
  }
  /** Dry run: what would happen. */
  plan: null | {
    existing: null | {id: string; owner: string | null; state: string}
    action: string
    /** The exit status the real run would have for what a dry run can know (3: it would refuse). */
    wouldExit: number
    /** env.sh was sourced with bash to read its values (its commands ran, even in a dry run). */
    envShSourced: boolean
    ports: Array<{label: string; port: number}>
    env: Record<string, string>
    then: string
  }
  ladder: LadderReport | null
}

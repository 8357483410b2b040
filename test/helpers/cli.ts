import {execa} from 'execa'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
/** Real NeMo Gym configs and JSONL files (Apache-2.0, unmodified copy; see its NOTICE.md). */
export const snapshotRoot = path.join(repoRoot, 'test', 'fixtures', 'nemo-gym-snapshot')
const bin = path.join(repoRoot, 'bin', 'run.js')

export interface CliResult {
  exitCode: number
  stdout: string
  stderr: string
  /** stdout parsed as JSON when possible. */
  json: any
}

/** Run the built CLI (dist/) as a real process, the way a user does. */
export async function runCli(
  args: string[],
  options: {env?: Record<string, string | undefined>; cwd?: string; input?: string; timeout?: number} = {},
): Promise<CliResult> {
  const result = await execa(process.execPath, [bin, ...args], {
    reject: false,
    cwd: options.cwd ?? repoRoot,
    env: {NO_COLOR: '1', ...options.env},
    input: options.input,
    timeout: options.timeout ?? 120_000,
  })
  let json: any
  try {
    json = JSON.parse(String(result.stdout))
  } catch {
    json = undefined
  }
  return {exitCode: result.exitCode ?? -1, stdout: String(result.stdout), stderr: String(result.stderr), json}
}

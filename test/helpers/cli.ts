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
  /**
   * Under --json: the command's own document (the envelope's `result`), with the envelope's
   * `error` (and its exit status as `error.exit`) when it failed. Undefined when stdout is not JSON.
   */
  json: any
  /** The whole --json envelope: {status, exit_code, result, warnings, error}. */
  envelope: any
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
  let envelope: any
  try {
    envelope = JSON.parse(String(result.stdout))
  } catch {
    envelope = undefined
  }
  const camel = camelCaseKeys(envelope)
  if (camel.length > 0) throw new Error(`gymrecipe ${args.join(' ')} printed camelCase keys in its --json document (keys are snake_case): ${camel.join(', ')}`)
  return {exitCode: result.exitCode ?? -1, stdout: String(result.stdout), stderr: String(result.stderr), json: unwrap(envelope), envelope}
}

function unwrap(envelope: any): any {
  if (!envelope || typeof envelope !== 'object' || !('exit_code' in envelope)) return envelope
  if (envelope.error) return {...(envelope.result ?? {}), error: {...envelope.error, exit: envelope.exit_code}}
  return envelope.result
}

/** Values the document carries from someone else (a row's request, a service's answer, a Gym config) keep their own keys. */
const FOREIGN = new Set(['body', 'readyz', 'merged', 'fields'])

/** Paths of keys in an envelope that are not snake_case (the README's --json contract). */
export function camelCaseKeys(envelope: unknown): string[] {
  if (!envelope || typeof envelope !== 'object' || !('exit_code' in envelope)) return []
  const found: string[] = []
  const walk = (value: unknown, at: string): void => {
    if (Array.isArray(value)) value.forEach((item, i) => walk(item, `${at}[${i}]`))
    else if (value && typeof value === 'object') {
      for (const [key, inner] of Object.entries(value)) {
        if (/^[a-z][a-z0-9]*[A-Z]/.test(key)) found.push(`${at}.${key}`)
        if (!FOREIGN.has(key)) walk(inner, `${at}.${key}`)
      }
    }
  }
  walk(envelope, '')
  return found
}

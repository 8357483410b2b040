import {ExitCode, GymError} from '../../errors.js'

export const GYM_CONFIG_ERROR = 'E_GYM_CONFIG'

/** Why a config could not be read; kept in `details.reason` so callers and tests need not parse messages. */
export type GymConfigErrorReason =
  | 'gym-root'
  | 'not-found'
  | 'outside-root'
  | 'yaml'
  | 'not-a-mapping'
  | 'config-paths'
  | 'include-cycle'
  | 'server-shape'
  | 'directive'
  | 'inherit-cycle'
  | 'interpolation'

export interface SourceLocation {
  file?: string
  line?: number
  pointer?: string
}

/** Bad input in a Gym config: exit status 2 (usage), with the file, line and pointer when known. */
export function gymConfigError(
  reason: GymConfigErrorReason,
  message: string,
  location: SourceLocation = {},
  hint?: string,
): GymError {
  return new GymError(message, {
    code: GYM_CONFIG_ERROR,
    exit: ExitCode.usage,
    hint,
    location: {file: location.file, line: location.line, pointer: location.pointer},
    details: {reason},
  })
}

import {setFlagsFromString} from 'node:v8'

/**
 * From now on, V8 keeps its young generation at the size it has. For a stream whose objects die
 * young, growing it only adds resident memory. Call it once the code is loaded: changed flags make
 * V8 refuse the code caches of scripts compiled afterwards.
 */
export function stopYoungGenerationGrowth(): void {
  setFlagsFromString('--semi-space-growth-factor=1')
}

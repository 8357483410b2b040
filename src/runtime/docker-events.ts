/**
 * Live container events from the Docker Engine (GET /events), filtered by label, so a caller
 * learns about create/start/die/destroy the moment the daemon does instead of polling.
 */
import type Docker from 'dockerode'
import type {Readable} from 'node:stream'

export interface ContainerEvent {
  action: string
  id: string
  name: string | undefined
  attributes: Record<string, string>
  /** Daemon time of the event, ms since the epoch. */
  timeMs: number
}

export interface EventWatch {
  close(): void
}

/**
 * Subscribe to container events whose container carries every label in `labels` (key=value).
 * Resolves once the daemon has accepted the subscription, so nothing created afterwards is missed.
 */
/** An event as the Engine API streams it (older daemons also send id, status and time). */
interface EngineEvent {
  Action?: string
  Actor?: {ID?: string; Attributes?: Record<string, string>}
  id?: string
  status?: string
  time?: number
  timeNano?: number | string
}

export async function watchContainerEvents(
  docker: Docker,
  labels: string[],
  onEvent: (event: ContainerEvent) => void,
  onError?: (error: Error) => void,
): Promise<EventWatch> {
  const stream = (await docker.getEvents({filters: {type: ['container'], label: labels}})) as unknown as Readable
  let buffered = ''
  stream.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8')
    let newline: number
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline).trim()
      buffered = buffered.slice(newline + 1)
      if (!line) continue
      let raw: EngineEvent
      try {
        raw = JSON.parse(line) as EngineEvent
      } catch {
        continue
      }
      const attributes = (raw.Actor?.Attributes ?? {}) as Record<string, string>
      const action = String(raw.Action ?? raw.status ?? '')
      onEvent({
        // "exec_start: bash ..." style actions keep only their verb.
        action: action.split(':')[0],
        id: String(raw.Actor?.ID ?? raw.id ?? ''),
        name: attributes.name,
        attributes,
        timeMs: raw.timeNano ? Number(BigInt(raw.timeNano) / 1_000_000n) : Number(raw.time ?? 0) * 1000,
      })
    }
  })
  stream.on('error', (error: Error) => onError?.(error))
  return {
    close() {
      stream.removeAllListeners('data')
      stream.on('error', () => undefined)
      stream.destroy()
    },
  }
}

/**
 * The service's durable state, all under one state directory:
 *   rows/<row>/workspace/     the row's working directory (Pi's cwd; its files survive restarts)
 *   rows/<row>/sessions/      the row's Pi session file (Pi's own conversation history)
 *   rows/<row>/turns.jsonl    the turn log: started / completed / failed / interrupted, synced
 *   running/<pid>.json        one file per Pi process alive, written before its turn is answered
 * A Pi process outlives a service that was killed (it runs in a process group of its own);
 * `fenceStale` ends those by the pid and start time they were recorded with, and marks their
 * turns interrupted. Nothing is ever retried.
 */
import {closeSync, existsSync, fstatSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, writeFileSync, writeSync} from 'node:fs'
import path from 'node:path'
import {livePids, procStat} from '../lib/process-table.js'

export const ROW_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/u

export interface TurnState {
  turn: number
  status: 'running' | 'completed' | 'failed' | 'interrupted'
  started_at: string
  finished_at?: string
  pid?: number
  reason?: string
}

export interface RunningRecord {
  pid: number
  start_time: string
  row_id: string
  turn: number
  started_at: string
}

/** Field 22 of /proc/<pid>/stat: the start time in clock ticks, which tells a reused pid apart. */
export function processStartTime(pid: number): string | undefined {
  return procStat(pid)?.startTime
}

/** Pids of the live processes in process group `pgid` (a turn's Pi and what its tools started). */
export function groupMembers(pgid: number): number[] {
  return livePids().filter((pid) => procStat(pid)?.pgid === pgid)
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** SIGTERM the group, SIGKILL what is left after `graceMs`, and wait until it is empty. */
export async function endProcessGroup(pgid: number, graceMs = 2000): Promise<void> {
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(-pgid, name)
    } catch {
      // the group is already empty
    }
  }
  signal('SIGTERM')
  const deadline = Date.now() + graceMs
  while (groupMembers(pgid).length > 0 && Date.now() < deadline) await sleep(50)
  if (groupMembers(pgid).length > 0) signal('SIGKILL')
  while (groupMembers(pgid).length > 0) await sleep(50)
}

function appendSynced(file: string, line: string): void {
  const fd = openSync(file, 'a+')
  try {
    // a line torn by a crash must not swallow the next record: start a fresh line after it
    const {size} = fstatSync(fd)
    const last = Buffer.alloc(1)
    const torn = size > 0 && readSync(fd, last, 0, 1, size - 1) === 1 && last[0] !== 0x0a
    writeSync(fd, `${torn ? '\n' : ''}${line}\n`)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

export class RowStore {
  readonly agentDir: string
  private readonly rowsDir: string
  private readonly runningDir: string

  constructor(readonly stateDir: string) {
    this.agentDir = path.join(stateDir, 'pi-agent')
    this.rowsDir = path.join(stateDir, 'rows')
    this.runningDir = path.join(stateDir, 'running')
    for (const dir of [this.agentDir, this.rowsDir, this.runningDir]) mkdirSync(dir, {recursive: true})
  }

  rowPaths(rowId: string) {
    const dir = path.join(this.rowsDir, rowId)
    return {dir, workspace: path.join(dir, 'workspace'), sessions: path.join(dir, 'sessions'), turns: path.join(dir, 'turns.jsonl')}
  }

  /** Create the row's folders on first use; say whether it existed already. */
  openRow(rowId: string): {existed: boolean} {
    const paths = this.rowPaths(rowId)
    const existed = existsSync(paths.dir)
    mkdirSync(paths.workspace, {recursive: true})
    mkdirSync(paths.sessions, {recursive: true})
    return {existed}
  }

  rows(): string[] {
    return readdirSync(this.rowsDir).filter((name) => ROW_ID.test(name))
  }

  turns(rowId: string): TurnState[] {
    const file = this.rowPaths(rowId).turns
    if (!existsSync(file)) return []
    const byTurn = new Map<number, TurnState>()
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (line.trim() === '') continue
      let record: any
      try {
        record = JSON.parse(line)
      } catch {
        continue // a line cut short by a crash: the turn it began stays as it was
      }
      if (record.event === 'started') byTurn.set(record.turn, {turn: record.turn, status: 'running', started_at: record.at, pid: record.pid})
      else {
        const turn = byTurn.get(record.turn)
        if (turn) Object.assign(turn, {status: record.event, finished_at: record.at, ...(record.reason ? {reason: record.reason} : {})})
      }
    }
    return [...byTurn.values()].sort((a, b) => a.turn - b.turn)
  }

  turnStarted(rowId: string, turn: number, pid: number): void {
    appendSynced(this.rowPaths(rowId).turns, JSON.stringify({turn, event: 'started', at: new Date().toISOString(), pid}))
  }

  turnEnded(rowId: string, turn: number, event: 'completed' | 'failed' | 'interrupted', reason?: string): void {
    appendSynced(this.rowPaths(rowId).turns, JSON.stringify({turn, event, at: new Date().toISOString(), ...(reason ? {reason} : {})}))
  }

  recordRunning(record: RunningRecord): void {
    const file = path.join(this.runningDir, `${record.pid}.json`)
    writeFileSync(`${file}.tmp`, JSON.stringify(record))
    renameSync(`${file}.tmp`, file)
  }

  clearRunning(pid: number): void {
    rmSync(path.join(this.runningDir, `${pid}.json`), {force: true})
  }

  /**
   * At start-up: end every Pi process a previous run of the service left behind (matched by pid
   * and start time, never by name) and mark its turn interrupted; a turn logged as started whose
   * process is gone is marked interrupted too.
   */
  async fenceStale(): Promise<{ended: RunningRecord[]; interrupted: {row_id: string; turn: number}[]}> {
    const ended: RunningRecord[] = []
    for (const name of readdirSync(this.runningDir)) {
      if (!name.endsWith('.json')) continue
      const file = path.join(this.runningDir, name)
      let record: RunningRecord
      try {
        record = JSON.parse(readFileSync(file, 'utf8'))
      } catch {
        rmSync(file, {force: true})
        continue
      }
      const startTime = processStartTime(record.pid)
      // the group id is the leader's pid; members may outlive a dead leader, but a live process
      // with another start time is someone else who got the pid: leave it alone
      const ours = startTime === record.start_time || (startTime === undefined && groupMembers(record.pid).length > 0)
      if (ours) {
        await endProcessGroup(record.pid)
        ended.push(record)
      }
      rmSync(file, {force: true})
    }
    const interrupted: {row_id: string; turn: number}[] = []
    for (const rowId of this.rows()) {
      for (const turn of this.turns(rowId)) {
        if (turn.status !== 'running') continue
        const fenced = ended.some((r) => r.row_id === rowId && r.turn === turn.turn)
        this.turnEnded(rowId, turn.turn, 'interrupted', fenced ? 'the service stopped during the turn; its Pi process was ended at the next start' : 'the service stopped during the turn')
        interrupted.push({row_id: rowId, turn: turn.turn})
      }
    }
    return {ended, interrupted}
  }
}

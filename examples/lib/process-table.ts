/**
 * The process table as the kernel shows it (/proc), independent of what any service reports.
 */
import {readdirSync, readFileSync, readlinkSync, realpathSync} from 'node:fs'

export interface ProcessEntry {
  pid: number
  ppid: number
  pgid: number
  /** the command line as the process shows it now (Pi renames itself to `pi`) */
  args: string
}

export interface ProcStat {
  /** R, S, Z, ... */
  state: string
  ppid: number
  pgid: number
  /** field 22, in clock ticks since boot: tells a reused pid apart */
  startTime: string
}

/** The fields of /proc/<pid>/stat this code uses; undefined once the process is gone. */
export function procStat(pid: number): ProcStat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // the command name in parentheses may hold spaces: count fields after its closing one
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return {state: fields[0], ppid: Number(fields[1]), pgid: Number(fields[2]), startTime: fields[19]}
  } catch {
    return undefined
  }
}

/** Pids listed in /proc now. */
export function livePids(): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/u.test(entry))
    .map(Number)
}

/**
 * Every live process running the executable `exe`. Matched by /proc/<pid>/exe, which a process
 * cannot change, rather than by its command line, which it can (Node programs set
 * `process.title`, and Pi does).
 */
export function processesRunning(exe: string): ProcessEntry[] {
  const target = realpathSync(exe)
  const found: ProcessEntry[] = []
  for (const pid of livePids()) {
    try {
      if (readlinkSync(`/proc/${pid}/exe`) !== target) continue
      const stat = procStat(pid)
      // a zombie has been ended; it only waits for its parent to collect it
      if (stat === undefined || stat.state === 'Z') continue
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ')
      found.push({pid, ppid: stat.ppid, pgid: stat.pgid, args: args.length > 160 ? `${args.slice(0, 157)}...` : args})
    } catch {
      // the process ended while the table was read, or is not ours to inspect
    }
  }
  return found
}

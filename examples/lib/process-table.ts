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

/**
 * Every live process running the executable `exe`. Matched by /proc/<pid>/exe, which a process
 * cannot change, rather than by its command line, which it can (Node programs set
 * `process.title`, and Pi does).
 */
export function processesRunning(exe: string): ProcessEntry[] {
  const target = realpathSync(exe)
  const found: ProcessEntry[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/u.test(entry)) continue
    try {
      if (readlinkSync(`/proc/${entry}/exe`) !== target) continue
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      // a zombie has been ended; it only waits for its parent to collect it
      if (fields[0] === 'Z') continue
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ')
      found.push({pid: Number(entry), ppid: Number(fields[1]), pgid: Number(fields[2]), args: args.length > 160 ? `${args.slice(0, 157)}...` : args})
    } catch {
      // the process ended while the table was read, or is not ours to inspect
    }
  }
  return found
}

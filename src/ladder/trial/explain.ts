/**
 * What the container's log says about a failed trial. The Gateway reports an agent failure as a
 * bare code (`agent_error`, or `cleanup_unverified` caused by it); the reason — the agent's 500, a
 * model reply the agent could not validate, a grader's traceback — is only in the log. This finds
 * the line that explains the failure among the log lines of the trial's window.
 */

/** Lines an abort always leaves (a cancelled callback), which never explain a failure. */
const ABORT_NOISE = /\bCancelledError\b|RuntimeError: No response returned\./

/** What explains a failure, strongest first. */
const EXPLAINING: RegExp[] = [
  /Received an invalid response from model server/,
  /\d+ validation errors? for \w+/,
  /exception calling an inner server|Error calling .* server/i,
  /^(?:\(\S+\) )?\s*(?:[\w.]+\.)?\w*(?:Error|Exception)(?:: .+)?$/,
  /\bHTTP [45]\d\d\b|\b[45]\d\d (?:Internal Server Error|Bad Request|Not Found|Unprocessable)/,
]

export interface Explanation {
  /** The explaining line, as logged (trimmed, at most 400 characters). */
  line: string
  /** How it was tied to the trial. */
  tie: string
}

/**
 * The log line that explains a failed trial. Lines are tied to the trial by its request id or
 * rollout id (the Gateway's failure block and what follows it, and every line naming an id);
 * where nothing names the trial, the window's own lines are used and said to be.
 */
export function explainFailure(lines: string[], ids: {requestId: string; rolloutIds: string[]}): Explanation | undefined {
  const names = [ids.requestId, ...ids.rolloutIds].filter(Boolean)
  const tied = new Set<number>()
  lines.forEach((line, index) => {
    if (!names.some((name) => line.includes(name))) return
    tied.add(index)
    // A block (a traceback after "trial failed request_id=...") runs on over the lines that follow it.
    for (let next = index + 1; next < lines.length && next <= index + 60; next++) {
      if (names.some((name) => lines[next].includes(name)) && next !== index + 1) break
      tied.add(next)
    }
  })
  const pick = (indices: number[], tie: string): Explanation | undefined => {
    const candidates = indices.map((i) => lines[i]).filter((line) => line.trim() && !ABORT_NOISE.test(line))
    for (const pattern of EXPLAINING) {
      const found = candidates.filter((line) => pattern.test(line.trim())).at(-1)
      if (found) return {line: found.trim().slice(0, 400), tie}
    }
    return undefined
  }
  const ofTrial = pick([...tied].sort((a, b) => a - b), `a log line of trial ${ids.requestId}`)
  if (ofTrial) return ofTrial
  return pick(lines.map((_, i) => i), 'a log line written while the trial ran (none names it)')
}

/** Each rung describes itself, and everything that lists rungs reads those descriptions. */
import {describe, expect, it} from 'vitest'

import {nextAfterLadder} from '../../src/cli/next-step.js'
import {RUNG_DEFINITIONS, RUNGS, type LadderReport} from '../../src/ladder/index.js'
import Verify from '../../src/commands/verify.js'

describe('rung definitions', () => {
  it('are the ladder, in its order, each saying what it proves, what its verdict depends on and what comes next', () => {
    expect(RUNG_DEFINITIONS.map((d) => d.rung)).toEqual([...RUNGS])
    for (const d of RUNG_DEFINITIONS) {
      expect(d.summary.length, d.rung).toBeGreaterThan(20)
      expect(d.inputs, d.rung).toContain('files')
    }
    expect(RUNG_DEFINITIONS.filter((d) => !d.next).map((d) => d.rung)).toEqual(['training'])
  })

  it('give the next step after a passed climb, and verify --help its rung list', () => {
    const passed = (level: (typeof RUNGS)[number]): LadderReport => ({recipe: 'cal', dir: '/r', level, climbed: true, status: 'pass', stoppedAt: null, smoke: false, rungs: []})
    expect(nextAfterLadder(passed('data'), '/relax')).toBe('next: gymrecipe start cal --relax-root /relax')
    expect(nextAfterLadder(passed('trial'), '/relax')).toBe('next: gymrecipe train cal --relax-root /relax --dry-run')
    expect(nextAfterLadder(passed('training'), '/relax')).toBeUndefined()
    for (const d of RUNG_DEFINITIONS) expect(Verify.description).toContain(`${d.rung.padEnd(9)}${d.summary}`)
  })
})

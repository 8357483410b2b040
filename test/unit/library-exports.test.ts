import {describe, expect, it} from 'vitest'

import * as gym from '../../src/gym/index.js'

describe('the gymrecipe/gym library entry point', () => {
  it('exposes the call, task and rollout APIs', () => {
    for (const name of ['runCall', 'callRow', 'loadCallConfig', 'exportTasks', 'buildScenarios', 'ingestRollouts', 'taskIndexOf', 'defaultScenarioId']) {
      expect(typeof (gym as Record<string, unknown>)[name]).toBe('function')
    }
    // The reference vector: task index of scenario id "s1".
    expect(gym.taskIndexOf('s1')).toBe(1048143972598214168n)
  })
})

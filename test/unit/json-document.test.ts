import {describe, expect, it} from 'vitest'
import {LosslessNumber} from 'lossless-json'

import {snakeCaseKey, snakeCaseKeys, verbatim} from '../../src/json-document.js'

describe('--json document keys', () => {
  it('are snake_case; keys that are not lowerCamelCase stay as written', () => {
    expect(['dryRun', 'repeatedScenarioIds', 'gymURL', 'http2Status', 'HF_TOKEN', 'static.env-sh', 'exit_code', 'x', 'Ready'].map(snakeCaseKey)).toEqual([
      'dry_run', 'repeated_scenario_ids', 'gym_url', 'http2_status', 'HF_TOKEN', 'static.env-sh', 'exit_code', 'x', 'Ready',
    ])
  })

  it('are converted all the way down, but never inside a verbatim value', () => {
    const body = verbatim({additionalProperties: false, nestedKey: {deepKey: 1}})
    const doc = snakeCaseKeys({stoppedAt: null, rungs: [{checks: [{evidence: {wcLines: 3}}]}], firstRequest: {body}, big: new LosslessNumber('12345678901234567890')})
    expect(doc).toEqual({stopped_at: null, rungs: [{checks: [{evidence: {wc_lines: 3}}]}], first_request: {body: {additionalProperties: false, nestedKey: {deepKey: 1}}}, big: new LosslessNumber('12345678901234567890')})
    expect((doc as {big: unknown}).big).toBeInstanceOf(LosslessNumber)
  })

  it('leave out undefined properties, as JSON.stringify does', () => {
    expect(snakeCaseKeys({location: {file: undefined, line: undefined}, hintText: undefined, x: null})).toEqual({location: {}, x: null})
  })

  it('refuse a document that would have the same key twice', () => {
    expect(() => snakeCaseKeys({dryRun: true, dry_run: false})).toThrow('document has both dryRun and dry_run')
  })
})

describe('a verbatim value copied with its secrets redacted', () => {
  it('stays verbatim, so inspect --json prints the Gym config with its own keys', async () => {
    const {redactSecrets} = await import('../../src/contract/gym-config.js')
    const config = verbatim({someServer: {apiKey: 'sk-123', maxRetries: 2}})
    const copy = redactSecrets({merged: config})
    expect(snakeCaseKeys(copy)).toEqual({merged: {someServer: {apiKey: expect.not.stringContaining('sk-123'), maxRetries: 2}}})
  })
})

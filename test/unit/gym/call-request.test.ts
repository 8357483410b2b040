import {describe, expect, it} from 'vitest'

import {parseCallConfig} from '../../../src/gym/call/config.js'
import {parseJson, stringifyJson} from '../../../src/json/index.js'
import {projectFields, resolvePath} from '../../../src/gym/call/paths.js'
import {buildRowPlan} from '../../../src/gym/call/request.js'

const row = (text: string) => parseJson(text) as Record<string, unknown>

describe('row paths and request assembly', () => {
  it('decodes JSON strings at intermediate segments, not at the end', () => {
    const r = row('{"execution": {"response_json": "{\\"rows\\": [[1, 2]], \\"n\\": 12345678901234567890}"}}')
    expect(stringifyJson(resolvePath(r, 'execution.response_json.rows'))).toBe('[[1,2]]')
    expect(String(resolvePath(r, 'execution.response_json.n'))).toBe('12345678901234567890')
    expect(typeof resolvePath(r, 'execution.response_json')).toBe('string')
    expect(() => resolvePath(r, 'execution.missing')).toThrow('missing source path: execution.missing')
    expect(() => resolvePath(row('{"a": "not json"}'), 'a.b')).toThrow('a must contain valid JSON')
    expect(() => resolvePath(row('{"a": [1]}'), 'a.0')).toThrow('missing source path')
    expect(resolvePath(row('{"a": {"b": null}}'), 'a.b')).toBeNull()
  })

  it('projects response_fields by dot path with null for missing paths', () => {
    const response = parseJson('{"result": {"usersim_result": {"trajectory_id": "t-9"}, "reward": 1}}')
    expect(projectFields(response, {trajectory_id: 'result.usersim_result.trajectory_id', missing: 'result.nope.x', reward: 'result.reward'})).toMatchObject({
      trajectory_id: 't-9',
      missing: null,
    })
    expect(projectFields(response, {})).toEqual({})
  })

  it('builds the body from request_columns plus request_values, keeping big integers', () => {
    const config = parseCallConfig(
      'name: e\nendpoint: http://127.0.0.1:1\nroute: /execute\nrow_id_column: id\nrequest_columns: {sql: candidate.sql, rows: prior.response_json.rows}\nrequest_values: {database: demo, limit: 5}\nprovenance_columns: [candidate.id, variant]\n',
      'resource',
    )
    const planned = buildRowPlan(config, row('{"id": 9007199254740993, "candidate": {"sql": "select 1", "id": 7}, "prior": {"response_json": "{\\"rows\\": [1]}"}, "variant": null}'), 1)
    expect(planned.ok).toBe(true)
    if (!planned.ok) return
    expect(planned.plan.body).toBe('{"sql":"select 1","rows":[1],"database":"demo","limit":5}')
    expect(stringifyJson(planned.plan.rowId)).toBe('9007199254740993')
    // null provenance values are omitted
    expect(stringifyJson(planned.plan.provenance)).toBe('{"candidate.id":7}')
  })

  it('accepts request_column as an object or a JSON string of one, and refuses overwriting it', () => {
    const config = parseCallConfig('name: e\nendpoint: http://127.0.0.1:1\nroute: /run\nrequest_column: task\nrequest_values: {mode: eval}\n', 'resource')
    const fromObject = buildRowPlan(config, row('{"task": {"responses_create_params": {"input": []}}}'), 1)
    const fromString = buildRowPlan(config, row('{"task": "{\\"responses_create_params\\": {\\"input\\": []}}"}'), 2)
    expect(fromObject.ok && fromObject.plan.body).toBe('{"responses_create_params":{"input":[]},"mode":"eval"}')
    expect(fromString.ok && fromString.plan.body).toBe('{"responses_create_params":{"input":[]},"mode":"eval"}')
    const overwrite = buildRowPlan(config, row('{"task": {"mode": "train"}}'), 3)
    expect(overwrite.ok).toBe(false)
    expect(!overwrite.ok && overwrite.reason).toContain('would overwrite the field mode')
    const notObject = buildRowPlan(config, row('{"task": "[1]"}'), 4)
    expect(!notObject.ok && notObject.reason).toContain('task must contain a JSON object')
  })

  it('uses the line number as row id when row_id_column is unset and rejects unusable ids', () => {
    const config = parseCallConfig('name: e\nendpoint: http://127.0.0.1:1\nroute: /x\nrequest_values: {a: 1}\n', 'resource')
    const planned = buildRowPlan(config, row('{}'), 17)
    expect(planned.ok && planned.plan.rowId).toBe(17)
    const withId = parseCallConfig('name: e\nendpoint: http://127.0.0.1:1\nroute: /x\nrow_id_column: id\nrequest_values: {a: 1}\n', 'resource')
    for (const bad of ['{"id": {"x": 1}}', '{"id": ""}', '{}', '{"id": null}']) {
      const r = buildRowPlan(withId, row(bad), 1)
      expect(r.ok).toBe(false)
      expect(!r.ok && r.route).toBeNull()
    }
  })

  it('reports the route of the step whose request cannot be built', () => {
    const config = parseCallConfig(
      'name: e\nendpoint: http://127.0.0.1:1\nroute: /x\nrequest_values: {a: 1}\nsession:\n  initialize: [{route: /seed_session, request_column: task}]\n  cleanup: [{route: /cleanup}]\n',
      'resource',
    )
    const r = buildRowPlan(config, row('{}'), 1)
    expect(!r.ok && r.route).toBe('/seed_session')
  })
})

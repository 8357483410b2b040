import {describe, expect, it} from 'vitest'

import {Writable} from 'node:stream'
import {finished} from 'node:stream/promises'

import {Redactor, redactingStream} from '../../src/redact.js'

describe('Redactor', () => {
  const env = {
    HF_TOKEN: 'hf_abcdefghijklmnop',
    RAY_JOB_HEADERS: JSON.stringify({'x-ray-authorization': 'Bearer ray-token-0123456789', cookie: 'sid=cookie-value-xyz\r\nEvil: 1'}),
    OPENAI_API_KEY: 'sk-test-1234567890',
    PATH: '/usr/bin:/bin',
    SHORT_TOKEN: 'abc',
    AUTH_MODE: 'default',
  }
  const r = new Redactor(env)

  it('replaces secret-bearing environment values, header values and their line-broken parts', () => {
    expect(r.text('token hf_abcdefghijklmnop used')).toBe('token <redacted> used')
    expect(r.text('Authorization: Bearer ray-token-0123456789')).toBe('Authorization: <redacted>')
    expect(r.text('the token ray-token-0123456789 alone')).toBe('the token <redacted> alone')
    expect(r.text('bad header value "sid=cookie-value-xyz"')).toBe('bad header value "<redacted>"')
    expect(r.text('key=sk-test-1234567890.')).toBe('key=<redacted>.')
    // Not secrets: ordinary variables, and values too short to tell from words.
    expect(r.text('/usr/bin:/bin abc')).toBe('/usr/bin:/bin abc')
    expect(r.text('the default port')).toBe('the default port')
  })

  it('replaces the user:password part of any URL', () => {
    expect(r.text('dashboard http://ops:pw@10.0.0.1:8265 refused')).toBe('dashboard http://<redacted>@10.0.0.1:8265 refused')
    expect(r.text('see https://example.org/a@b')).toBe('see https://example.org/a@b')
  })

  it('redacts every string of a JSON document, keys included, and keeps other values', () => {
    const doc = {error: {message: 'header hf_abcdefghijklmnop', details: {url: 'http://u:p@h:1', status: 401, ok: false}}, ['sk-test-1234567890']: [1, 'x']}
    expect(r.value(doc)).toEqual({error: {message: 'header <redacted>', details: {url: 'http://<redacted>@h:1', status: 401, ok: false}}, '<redacted>': [1, 'x']})
  })

  it('finds a secret JSON-escaped inside a serialized document', () => {
    const withQuote = new Redactor({API_TOKEN: 'quote"inside-secret'})
    expect(withQuote.text(JSON.stringify({v: 'quote"inside-secret'}))).toBe('{"v":"<redacted>"}')
  })
})

describe('secrets are found by value, whatever their shape and however they are echoed', () => {
  it('a lowercase-only or short token in a secret variable is redacted; settings named like secrets are not', () => {
    const r = new Redactor({HF_TOKEN: 'onlylowercaseletters', SESSION_COOKIE: 'ab12c', RAY_AUTH_MODE: 'token', AUTH_TOKEN_PATH: '/home/u/.ray/auth_token'})
    expect(r.text('sent onlylowercaseletters and ab12c')).toBe('sent <redacted> and <redacted>')
    expect(r.text('mode token, file /home/u/.ray/auth_token')).toBe('mode token, file /home/u/.ray/auth_token')
  })

  it('variables named in GYMRECIPE_SECRET_VARS are secrets whatever their name', () => {
    const r = new Redactor({GYMRECIPE_SECRET_VARS: 'JUDGE_KEY_VALUE, PLAIN', JUDGE_KEY_VALUE: 'judgevalue', PLAIN: 'plainvalue', OTHER: 'othervalue'})
    expect(r.text('judgevalue plainvalue othervalue')).toBe('<redacted> <redacted> othervalue')
  })

  it('an echo JSON-\\u-escaped, percent-encoded, partly escaped or base64-encoded is redacted', () => {
    const secret = 'Tok3nSecretValue'
    const r = new Redactor({API_TOKEN: secret})
    const uEscaped = [...secret].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')
    expect(r.text(`{"echo":"${uEscaped}"}`)).toBe('{"echo":"<redacted>"}')
    expect(r.text(`{"echo":"Tok3n\\u0053ecret%56alue"}`)).toBe('{"echo":"<redacted>"}')
    expect(r.text(`?t=${encodeURIComponent(`a b/${secret}`)}`)).toBe('?t=a%20b%2F<redacted>')
    for (const wrapped of [secret, `Bearer ${secret}`, `x${secret}`, `xy${secret}yz`]) {
      const b64 = Buffer.from(wrapped).toString('base64')
      expect(r.text(b64), wrapped).not.toBe(b64)
      expect(Buffer.from(r.text(b64).replace('<redacted>', ''), 'base64').toString('latin1')).not.toContain('Secret')
      const url = Buffer.from(wrapped).toString('base64url')
      expect(r.text(url), wrapped).not.toBe(url)
    }
  })

  it('URL userinfo holding @, / or a quote, and query values, are taken from the configured URL', () => {
    const r = new Redactor({RAY_DASHBOARD_ADDRESS: 'http://ops:p@ss/w"rd@10.0.0.1:8265/?token=qtok123&x=1'})
    const shown = r.text('dashboard http://ops:p@ss/w"rd@10.0.0.1:8265/?token=qtok123&x=1 refused')
    expect(shown).not.toMatch(/p@ss|w"rd|qtok123/)
    expect(shown).toContain('10.0.0.1:8265')
  })

  it('credentials written inline are redacted without being configured', () => {
    const r = new Redactor({})
    expect(r.text("curl -H 'Authorization: Bearer abc.def-ghi' x")).toBe("curl -H 'Authorization: Bearer <redacted>' x")
    expect(r.text('export MY_API_KEY=k9k9k9k9')).toBe('export MY_API_KEY=<redacted>')
    expect(r.text('Basic dXNlcjpwYXNzd29yZA==')).toBe('Basic <redacted>')
    // Placeholders in hints stay readable.
    expect(r.text('export HF_TOKEN=<token> first')).toBe('export HF_TOKEN=<token> first')
    expect(r.holdsSecret('GYM_HOST=10.0.0.1')).toBe(false)
  })
})

describe('redaction is stable', () => {
  it('redacting twice changes nothing more', () => {
    const r = new Redactor({HF_TOKEN: 'hf_abcdefghijklmnop'})
    for (const text of ['Authorization: Bearer abc.def-ghi', 'curl -H "Authorization: Basic dXNlcjpwYXNzd29yZA==" x', 'token hf_abcdefghijklmnop', 'MY_API_KEY=k9k9k9k9']) {
      const once = r.text(text)
      expect(r.text(once), text).toBe(once)
    }
  })
})

describe('redactingStream', () => {
  const r = new Redactor({HF_TOKEN: 'hf_abcdefghijklmnop'})
  async function relayed(chunks: Array<string | Buffer>, maxHeld?: number): Promise<{text: string; writes: string[]}> {
    const writes: string[] = []
    const target = new Writable({write(chunk, _e, done) { writes.push(chunk.toString()); done() }})
    const stream = redactingStream(r, target, maxHeld)
    for (const c of chunks) stream.write(c)
    stream.end()
    await finished(stream)
    return {text: writes.join(''), writes}
  }

  it('finds a secret cut in two by a chunk boundary', async () => {
    const {text} = await relayed(['log: token hf_abcdef', 'ghijklmnop used\nnext line\n'])
    expect(text).toBe('log: token <redacted> used\nnext line\n')
  })

  it('keeps a character whose UTF-8 bytes are split across chunks', async () => {
    const bytes = Buffer.from('é hf_abcdefghijklmnop\n')
    const {text} = await relayed([bytes.subarray(0, 1), bytes.subarray(1)])
    expect(text).toBe('é <redacted>\n')
  })

  it('writes complete lines at once and a last line without newline when the stream ends', async () => {
    const {writes} = await relayed(['one\ntw', 'o hf_abcdefghijklmnop'])
    expect(writes).toEqual(['one\n', 'two <redacted>'])
  })

  it('does not hold a line longer than its limit', async () => {
    const {writes} = await relayed(['x'.repeat(20), 'y\n'], 16)
    expect(writes).toEqual(['x'.repeat(20), 'y\n'])
  })
})

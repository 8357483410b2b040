import {createRequire} from 'node:module'
import {describe, expect, it} from 'vitest'

import {pooledHttpTransport} from '../../../src/runtime/call-transport.js'

const require = createRequire(import.meta.url)

describe('pooled transport start-up', () => {
  it("loads undici's Pool on first use, without the package index (fetch, WebSocket, caches)", async () => {
    const index = require.resolve('undici')
    const pool = require.resolve('undici/lib/dispatcher/pool.js')
    expect(require.cache[pool]).toBeUndefined()
    const transport = await pooledHttpTransport()
    try {
      expect(require.cache[pool]).toBeDefined()
      expect(require.cache[index]).toBeUndefined()
    } finally {
      transport.close()
    }
  })
})

import {execFileSync} from 'node:child_process'
import {mkdtemp, symlink, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {firstInvalidUtf8, readInputText} from '../../src/runtime/read-input.js'

const spec = {what: 'the test input', maxBytes: 64, strictText: true}
const dir = () => mkdtemp(path.join(os.tmpdir(), 'gr-input-'))

describe('readInputText', () => {
  it('reads a small text file, and says undefined for a missing one', async () => {
    const d = await dir()
    await writeFile(path.join(d, 'a'), 'héllo\n')
    expect(await readInputText(path.join(d, 'a'), spec)).toBe('héllo\n')
    expect(await readInputText(path.join(d, 'missing'), spec)).toBeUndefined()
  })

  it('refuses a pipe at once instead of waiting for a writer', async () => {
    const d = await dir()
    execFileSync('mkfifo', [path.join(d, 'fifo')])
    await expect(readInputText(path.join(d, 'fifo'), spec)).rejects.toMatchObject({code: 'E_INPUT_NOT_FILE', exit: 2, message: 'the test input is a pipe (FIFO), not a file'})
  })

  it('refuses a link to /dev/zero, and a folder', async () => {
    const d = await dir()
    await symlink('/dev/zero', path.join(d, 'zero'))
    await expect(readInputText(path.join(d, 'zero'), spec)).rejects.toMatchObject({code: 'E_INPUT_NOT_FILE', message: 'the test input is a device, not a file'})
    await expect(readInputText(d, spec)).rejects.toMatchObject({code: 'E_INPUT_NOT_FILE', message: 'the test input is a directory, not a file'})
  })

  it('refuses a file over its limit without reading it', async () => {
    const d = await dir()
    await writeFile(path.join(d, 'big'), 'x'.repeat(65))
    await expect(readInputText(path.join(d, 'big'), spec)).rejects.toMatchObject({code: 'E_INPUT_TOO_LARGE', message: 'the test input is 65 bytes, over the 64-byte limit for it'})
  })

  it('refuses a NUL byte and invalid UTF-8 in text, naming the line', async () => {
    const d = await dir()
    await writeFile(path.join(d, 'nul'), 'a: 1\nb: "\0"\n')
    await expect(readInputText(path.join(d, 'nul'), spec)).rejects.toMatchObject({code: 'E_INPUT_NOT_TEXT', message: 'the test input holds a NUL byte, so it is not text', location: {line: 2}})
    await writeFile(path.join(d, 'latin1'), Buffer.from([0x61, 0x0a, 0x0a, 0x63, 0x61, 0x66, 0xe9, 0x0a]))
    await expect(readInputText(path.join(d, 'latin1'), spec)).rejects.toMatchObject({code: 'E_INPUT_NOT_TEXT', message: 'the test input is not valid UTF-8 text', location: {line: 3}})
    // outside strict mode the bytes are decoded as they are
    expect(await readInputText(path.join(d, 'nul'), {...spec, strictText: false})).toContain('\0')
  })
})

describe('firstInvalidUtf8', () => {
  it.each([
    [[0x61, 0x62], 2],
    [[0xc3, 0xa9, 0x61], 3],
    [[0x61, 0xc3], 1],
    [[0xc0, 0xaf], 0],
    [[0xed, 0xa0, 0x80], 0],
    [[0xf0, 0x9f, 0x98, 0x80, 0xff], 4],
    [[0xf4, 0x90, 0x80, 0x80], 0],
    [[0xe2, 0x82, 0xac], 3],
  ])('%j → %d', (bytes, offset) => {
    expect(firstInvalidUtf8(Uint8Array.from(bytes))).toBe(offset)
  })
})

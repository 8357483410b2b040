import {mkdtemp, readdir, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {GymError} from '../../../src/errors.js'
import {
  integerText,
  JsonSyntaxError,
  isLosslessNumber,
  LineBuilder,
  openJsonlOutput,
  parseJson,
  rawMembers,
  readJsonlBatches,
  readJsonlLines,
  scanObjectLine,
  scanObjectMembers,
  stringifyJson,
  withJsonlOutput,
} from '../../../src/json/index.js'

async function tempDir(): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), 'gr-json-'))
}

async function collect(file: string): Promise<{line: number; text: string}[]> {
  const lines = []
  for await (const line of readJsonlLines(file, 'FILE')) lines.push(line)
  return lines
}

function members(text: string): [string, string][] {
  return [...(scanObjectMembers(text)?.members ?? [])]
}

/** A small deterministic PRNG, so the fuzz cases are the same on every run. */
function prng(seed: number): () => number {
  let state = seed
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31
    return state / 2 ** 31
  }
}

describe('lossless parse and stringify', () => {
  it('keeps integers above 2^53 and float spellings exactly', () => {
    const text = '{"big":1152921504606846975,"near":9007199254740993,"one":1.0,"exp":1e+16,"neg":-0.0}'
    const value = parseJson(text) as any
    expect(isLosslessNumber(value.big)).toBe(true)
    expect(value.big.value).toBe('1152921504606846975')
    expect(stringifyJson(value)).toBe(text)
  })

  it('keeps the last value of a repeated key, as Python does', () => {
    expect(stringifyJson(parseJson('{"a":1,"a":2}'))).toBe('{"a":2}')
  })
})

describe('scanObjectMembers', () => {
  it('returns each member as its exact source text, in order', () => {
    const text = ' { "b" : 1.0 , "a":{"x": [1, 2e5, "}"]}, "c":"q\\"uote", "d":null } '
    expect(members(text)).toEqual([
      ['b', '1.0'],
      ['a', '{"x": [1, 2e5, "}"]}'],
      ['c', '"q\\"uote"'],
      ['d', 'null'],
    ])
  })

  it('decodes escaped keys and keeps a repeated key at its first position with its last value', () => {
    expect(members('{"k\\u00e9":1,"z":2,"k\\u00e9":3}')).toEqual([
      ['ké', '3'],
      ['z', '2'],
    ])
  })

  it('returns undefined for valid JSON that is not an object', () => {
    for (const text of ['[1]', '"s"', '12', 'null', 'true']) expect(scanObjectMembers(text)).toBeUndefined()
  })

  it('accepts and rejects exactly what JSON.parse does on tricky input', () => {
    const cases = [
      '{}', '{"a":1}', '{"a":-0}', '{"a":0.5e-3}', '{"a":1E+2}', '{"a":"\\u00e9\\n\\/"}', '{"a":[[],{}]}', '{"a":[{"b":[{"c":{}}]}]}',
      '', '{', '}', '{"a"}', '{"a":}', '{"a":1,}', '{,"a":1}', '{"a":1 "b":2}', '{a:1}', "{'a':1}", '{"a":01}', '{"a":1.}', '{"a":.5}',
      '{"a":+1}', '{"a":1e}', '{"a":--1}', '{"a":NaN}', '{"a":Infinity}', '{"a":-Infinity}', '{"a":tru}', '{"a":nul}', '{"a":"\\x"}',
      '{"a":"\\u12"}', '{"a":"tab\there"}', '{"a":"\u0001"}', '{"a":[1,]}', '{"a":[,1]}', '{"a":[1 2]}', '{"a":{"b":1]}', '{"a":[1}}',
      '{"a":1}x', '{"a":1}{}', '{"a":"unterminated}', '{"a":"\\"}', '\u00a0{"a":1}', '{"a":1}\u00a0', '{"a":truex}', '{"a":1}\n',
    ]
    for (const text of cases) {
      let native = true
      try {
        JSON.parse(text)
      } catch {
        native = false
      }
      let ours = true
      try {
        scanObjectMembers(text)
      } catch {
        ours = false
      }
      expect({text, ok: ours}).toEqual({text, ok: native})
    }
  })

  it('agrees with JSON.parse on thousands of random mutations of a valid line', () => {
    const base = '{"responses_create_params":{"input":[{"role":"user","content":"h\\u00e9 \\"x\\""}],"temperature":1.0},"reward":-1.5e-3,"ok":[true,false,null],"n":12}'
    const alphabet = '{}[]":,.-+eE0123456789 \\untrfals\t\n'
    const random = prng(7)
    for (let n = 0; n < 5000; n++) {
      let text = base
      for (let edits = 1 + Math.floor(random() * 3); edits > 0; edits--) {
        const at = Math.floor(random() * text.length)
        const char = alphabet[Math.floor(random() * alphabet.length)]
        text = random() < 0.5 ? text.slice(0, at) + char + text.slice(at + 1) : text.slice(0, at) + text.slice(at + 1)
      }
      let native: unknown
      try {
        native = JSON.parse(text)
      } catch {
        native = Symbol.for('invalid')
      }
      let ours: unknown
      let split: unknown
      try {
        const scanned = scanObjectMembers(text)
        ours = scanned === undefined ? 'not an object' : Object.fromEntries([...scanned.members].map(([key, raw]) => [key, JSON.parse(raw)]))
      } catch {
        ours = Symbol.for('invalid')
      }
      try {
        const scanned = scanObjectMembers(text, 'responses_create_params')
        const params = scanned?.members.get('responses_create_params')
        split = scanned === undefined ? 'not an object' : Object.fromEntries([...scanned.members].map(([key, raw]) => [key, JSON.parse(raw)]))
        // the nested split is what rawMembers gives for an object value, and nothing otherwise
        expect(scanned?.nested && [...scanned.nested]).toEqual(params?.startsWith('{') ? [...rawMembers(params)] : undefined)
      } catch (error) {
        if (!(error instanceof JsonSyntaxError)) throw error
        split = Symbol.for('invalid')
      }
      const expected = typeof native === 'object' && native !== null && !Array.isArray(native) ? native : typeof native === 'symbol' ? native : 'not an object'
      expect({text, ours, split}).toEqual({text, ours: expected, split: expected})
    }
  })

  it('flags float literals that overflow a double, and only those', () => {
    expect(scanObjectMembers('{"a":1e400}')?.hasNonFinite).toBe(true)
    expect(scanObjectMembers('{"a":[-1.5E+309]}')?.hasNonFinite).toBe(true)
    expect(scanObjectMembers(`{"a":${'9'.repeat(400)}.0}`)?.hasNonFinite).toBe(true)
    expect(scanObjectMembers('{"a":1e308,"b":1e-400,"c":"1e400"}')?.hasNonFinite).toBe(false)
    expect(scanObjectMembers(`{"a":${'9'.repeat(400)}}`)?.hasNonFinite).toBe(false)
  })

  it('splits the object value of the key asked for in the same pass, as rawMembers would', () => {
    const text = '{"a":1,"task" : { "b":"}{" , "c":[1,{"d":"\\\\"}],"b":2 },"z":{"y":0}}'
    const scanned = scanObjectMembers(text, 'task')!
    expect([...scanned.members]).toEqual(members(text))
    expect([...scanned.nested!]).toEqual([...rawMembers(scanned.members.get('task')!)])
    expect([...scanned.nested!]).toEqual([
      ['b', '2'],
      ['c', '[1,{"d":"\\\\"}]'],
    ])
    expect(scanObjectMembers('{"task":{}}', 'task')!.nested).toEqual(new Map())
    // absent, not an object, or repeated with a last value that is not an object: no split
    for (const other of ['{"a":{"b":1}}', '{"task":[{"b":1}]}', '{"task":"{}"}', '{"task":{"b":1},"task":null}']) {
      expect(scanObjectMembers(other, 'task')!.nested).toBeUndefined()
    }
    expect([...scanObjectMembers('{"task":null,"task":{"b":1}}', 'task')!.nested!]).toEqual([['b', '1']])
  })

  it('rawMembers splits an already validated object the same way', () => {
    const text = '{"a" : {"b":"}{"}, "c":[1,{"d":"\\\\"}],"e":true}'
    expect([...rawMembers(text)]).toEqual(members(text))
  })
})

describe('integerText', () => {
  it('gives the exact integer of whole-number literals and nothing for fractions', () => {
    expect(integerText('5')).toBe('5')
    expect(integerText('5.0')).toBe('5')
    expect(integerText('5e0')).toBe('5')
    expect(integerText('1.5e1')).toBe('15')
    expect(integerText('-0')).toBe('0')
    expect(integerText('-5.0')).toBe('-5')
    expect(integerText('1152921504606846975')).toBe('1152921504606846975')
    expect(integerText('1152921504606846975.000')).toBe('1152921504606846975')
    expect(integerText('5.5')).toBeUndefined()
    expect(integerText('1e-1')).toBeUndefined()
    expect(integerText('1e999999999')).toBeUndefined()
  })
})

describe('readJsonlLines', () => {
  it('yields non-blank lines with their 1-based numbers, CRLF and a missing final newline included', async () => {
    const dir = await tempDir()
    const file = path.join(dir, 'a.jsonl')
    await writeFile(file, '{"a":1}\r\n\n   \n{"b":2}\n{"c":3}')
    expect(await collect(file)).toEqual([
      {line: 1, text: '{"a":1}'},
      {line: 4, text: '{"b":2}'},
      {line: 5, text: '{"c":3}'},
    ])
  })

  it('keeps lines longer than a read chunk and multi-byte characters split across chunks intact', async () => {
    const dir = await tempDir()
    const file = path.join(dir, 'long.jsonl')
    const long = `{"s":"${'é😀'.repeat(700_000)}"}`
    await writeFile(file, `${long}\n{"x":1}\n`)
    const lines = await collect(file)
    expect(lines.map((l) => l.line)).toEqual([1, 2])
    expect(lines[0].text).toBe(long)
  })

  it('hands each line its own bytes in batches, across chunk boundaries, CRLF and multi-byte text', async () => {
    const dir = await tempDir()
    const file = path.join(dir, 'bytes.jsonl')
    // lines of every length around the 256 KiB chunk, some with CRLF, some blank, multi-byte text
    const texts = Array.from({length: 40}, (_, n) => `{"n":${n},"s":"${'é✓😀a'.repeat((n * 7919) % 40_000)}"}`)
    const content = texts.map((text, n) => (n % 5 === 0 ? `${text}\r\n\n` : n % 7 === 0 ? `${text}\n  \n` : `${text}\n`)).join('') + '{"last":true}'
    await writeFile(file, content)
    const seen: {line: number; text: string; bytes: string}[] = []
    let batches = 0
    for await (const batch of readJsonlBatches(file, 'ROWS', undefined, {bytes: true})) {
      batches++
      // the bytes are valid until the next batch is asked for
      for (const line of batch) seen.push({line: line.line, text: line.text, bytes: line.bytes!.toString('utf8')})
    }
    expect(batches).toBeGreaterThan(5)
    expect(seen.map((l) => l.text)).toEqual([...texts, '{"last":true}'])
    for (const line of seen) expect(line.bytes).toBe(line.text)
    expect(seen.map((l) => l.line)).toEqual(await collect(file).then((lines) => lines.map((l) => l.line)))
    for await (const batch of readJsonlBatches(file, 'ROWS')) expect(batch.every((line) => line.bytes === undefined)).toBe(true)
  })

  it('reads byte lines as the text reader does, a line carried across chunks included', async () => {
    const dir = await tempDir()
    const file = path.join(dir, 'carried.jsonl')
    // a line longer than a chunk, then one whose newline is the only one in the chunk that ends it
    const texts = [`{"s":"${'é'.repeat(150_000)}"}`, `{"t":"${'✓'.repeat(200_000)}"}`, '{"a":1}', `{"u":"${'x'.repeat(262_000)}"}`, '{"b":2}', '{"c":3}']
    await writeFile(file, texts.map((text, n) => (n === 2 ? `${text}\r\n\n` : `${text}\n`)).join(''))
    const seen: {line: number; text: string}[] = []
    for await (const batch of readJsonlBatches(file, 'ROWS', undefined, {bytes: true, text: false})) {
      for (let line = batch.next(); line; line = batch.next()) seen.push({line: line.line, text: line.bytes.toString('utf8')})
    }
    expect(seen).toEqual(await collect(file))
    expect(seen.map((l) => l.text)).toEqual(texts)
  })

  it('names the line of invalid UTF-8 when reading bytes, in a carried line or after it', async () => {
    const dir = await tempDir()
    const bad = Buffer.from([0xff, 0xfe])
    const long = Buffer.from(`{"s":"${'x'.repeat(300_000)}`)
    const cases: [Buffer, number][] = [
      [Buffer.concat([long, bad, Buffer.from('"}\n{"a":1}\n')]), 1],
      [Buffer.concat([long, Buffer.from('"}\n{"a":"'), bad, Buffer.from('"}\n')]), 2],
      [Buffer.concat([long, Buffer.from('"}\n{"a":1}\n\n{"b":"'), bad, Buffer.from('"}\n')]), 4],
    ]
    for (const [content, line] of cases) {
      const file = path.join(dir, `bad-${line}.jsonl`)
      await writeFile(file, content)
      const read = async () => {
        for await (const batch of readJsonlBatches(file, 'ROWS', undefined, {bytes: true, text: false})) while (batch.next());
      }
      await expect(read()).rejects.toMatchObject({code: 'E_JSONL_INVALID', location: {file, line}, message: 'line is not valid UTF-8'})
      await expect(collect(file)).rejects.toMatchObject({location: {line}})
    }
  })

  it('decodes many short multi-byte lines of a chunk piece by piece without losing or splitting one', async () => {
    const dir = await tempDir()
    const file = path.join(dir, 'short.jsonl')
    const texts = Array.from({length: 20_000}, (_, n) => `{"n":${n},"s":"${['é', '✓', '😀'][n % 3]}${'x'.repeat(n % 97)}"}`)
    await writeFile(file, texts.map((text, n) => (n % 11 === 0 ? `${text}\n\n` : `${text}\n`)).join(''))
    const lines = await collect(file)
    expect(lines.map((l) => l.text)).toEqual(texts)
    expect(lines[12].line).toBe(15)
  })

  it('rejects invalid UTF-8 naming the line', async () => {
    const dir = await tempDir()
    const file = path.join(dir, 'bad.jsonl')
    await writeFile(file, Buffer.concat([Buffer.from('{"a":1}\n{"b":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}\n')]))
    await expect(collect(file)).rejects.toMatchObject({code: 'E_JSONL_INVALID', exit: 2, location: {file, line: 2}, message: 'line is not valid UTF-8'})
  })

  it('reports a missing file, a directory and a device each as what it is (exit 2)', async () => {
    const dir = await tempDir()
    const missing = path.join(dir, 'nope.jsonl')
    await expect(collect(missing)).rejects.toMatchObject({code: 'E_JSONL_MISSING', exit: 2, message: `JSONL file does not exist: ${missing}`})
    await expect(collect(dir)).rejects.toMatchObject({code: 'E_JSONL_NOT_FILE', exit: 2, message: `${dir} is a directory, not a JSONL file`})
    await expect(collect('/dev/null')).rejects.toMatchObject({code: 'E_JSONL_NOT_FILE', exit: 2, message: '/dev/null is a character device, not a JSONL file'})
  })
})

describe('scanObjectLine', () => {
  it('names file and line for invalid JSON and for lines that are not objects', () => {
    expect(() => scanObjectLine({line: 3, text: '{"a":NaN}'}, 'x.jsonl')).toThrow(GymError)
    expect(() => scanObjectLine({line: 3, text: '{"a":NaN}'}, 'x.jsonl')).toThrow(/invalid JSON: JSON value expected at column 6/)
    try {
      scanObjectLine({line: 4, text: '[1,2]'}, 'x.jsonl')
      expect.unreachable()
    } catch (error) {
      expect(error).toMatchObject({code: 'E_JSONL_INVALID', exit: 2, location: {file: 'x.jsonl', line: 4}, message: 'line must contain a JSON object'})
      expect((error as GymError).located).toBe('x.jsonl:4: line must contain a JSON object')
    }
  })
})

describe('JSONL output', () => {
  it('appears only on commit, through a temporary sibling', async () => {
    const dir = await tempDir()
    const target = path.join(dir, 'out.jsonl')
    const output = await openJsonlOutput(target, false)
    await output.write('{"a":1}')
    await output.write(`{"b":"${'x'.repeat(2 << 20)}"}`)
    expect(await readdir(dir)).not.toContain('out.jsonl')
    await output.commit()
    const text = await readFile(target, 'utf8')
    expect(text.split('\n')).toHaveLength(3)
    expect(text.startsWith('{"a":1}\n{"b":"xxx')).toBe(true)
    expect(await readdir(dir)).toEqual(['out.jsonl'])
  })

  it('leaves an existing target untouched and no temporary file when the fill fails', async () => {
    const dir = await tempDir()
    const target = path.join(dir, 'out.jsonl')
    await writeFile(target, 'previous\n')
    await expect(
      withJsonlOutput(target, false, async (output) => {
        await output.write('{"a":1}')
        throw new Error('bad row')
      }),
    ).rejects.toThrow('bad row')
    expect(await readFile(target, 'utf8')).toBe('previous\n')
    expect(await readdir(dir)).toEqual(['out.jsonl'])
  })

  it('writes built lines in order between other writes, growing past its buffer for a long line', async () => {
    const dir = await tempDir()
    const target = path.join(dir, 'built.jsonl')
    const output = await openJsonlOutput(target, false)
    const built = new LineBuilder(64)
    const source = Buffer.from('xx{"a":"✓ copied from the middle of a longer buffer, more than the short-copy size"}yy')
    const long = `"${'é'.repeat(100_000)}"`
    let expected = ''
    for (let batch = 0; batch < 20; batch++) {
      for (let n = 0; n < batch; n++) {
        built.bytes(source, 2, source.length - 2)
        built.text(n === 7 ? long : `{"n":${n},"s":"😀"}`)
        built.bytes(Buffer.from(','))
        built.endLine()
        expected += `${source.subarray(2, -2).toString()}${n === 7 ? long : `{"n":${n},"s":"😀"}`},\n`
      }
      await output.writeBuilt(built)
      await output.write('{"between":1}')
      expected += '{"between":1}\n'
    }
    expect(output.lines).toBe(190 + 20)
    await output.commit()
    expect(await readFile(target, 'utf8')).toBe(expected)
  })

  it('builds into a released buffer again, and never into one still being written', () => {
    const built = new LineBuilder(16)
    const line = (text: string) => {
      built.text(text)
      built.endLine()
      return built.take()
    }
    const sameMemory = (a: Buffer, b: Buffer) => a.buffer === b.buffer && a.byteOffset === b.byteOffset
    const first = line('first')
    const second = line('second')
    const third = line('third')
    // nothing released: three buffers
    expect(sameMemory(first.bytes, second.bytes) || sameMemory(second.bytes, third.bytes) || sameMemory(first.bytes, third.bytes)).toBe(false)
    first.release()
    const fourth = line('fourth')
    const fifth = line('fifth')
    expect(sameMemory(fifth.bytes, first.bytes)).toBe(true)
    expect(sameMemory(fourth.bytes, second.bytes) || sameMemory(fifth.bytes, second.bytes) || sameMemory(fifth.bytes, third.bytes)).toBe(false)
    expect([second, third, fourth, fifth].map((taken) => [taken.bytes.toString(), taken.lines])).toEqual([
      ['second\n', 1],
      ['third\n', 1],
      ['fourth\n', 1],
      ['fifth\n', 1],
    ])
  })

  it('writes batches of lines of every size in order', async () => {
    const dir = await tempDir()
    const target = path.join(dir, 'lines.jsonl')
    const output = await openJsonlOutput(target, false)
    const batch = Array.from({length: 3000}, (_, n) => `{"n":${n},"s":"${'é😀'.repeat((n * 37) % 700)}${n % 1000 === 0 ? 'y'.repeat(400_000) : ''}"}`)
    await output.writeLines(batch.slice(0, 1500))
    await output.write('{"between":1}')
    await output.writeLines(batch.slice(1500))
    expect(output.lines).toBe(3001)
    await output.commit()
    expect(await readFile(target, 'utf8')).toBe(`${[...batch.slice(0, 1500), '{"between":1}', ...batch.slice(1500)].join('\n')}\n`)
  })

  it('counts lines and writes nothing on a dry run', async () => {
    const dir = await tempDir()
    const target = path.join(dir, 'sub', 'out.jsonl')
    const lines = await withJsonlOutput(target, true, async (output) => {
      await output.write('{"a":1}')
      await output.write('{"b":2}')
      return output.lines
    })
    expect(lines).toBe(2)
    expect(await readdir(dir)).toEqual([])
  })
})

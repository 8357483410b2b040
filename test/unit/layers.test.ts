/**
 * The import-layer rule of eslint.config.js: an upward import or a process/Docker/HTTP import
 * outside src/runtime fails the lint (and so `npm test`), while downward imports pass; so does an
 * explicit `any` in src/.
 */
import {ESLint} from 'eslint'
import path from 'node:path'
import {describe, expect, it} from 'vitest'

import {repoRoot} from '../helpers/cli.js'

const eslint = new ESLint({cwd: repoRoot})

async function layerErrors(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, {filePath: path.join(repoRoot, file)})
  return result.messages.filter((m) => m.ruleId === '@typescript-eslint/no-restricted-imports').map((m) => m.message)
}

describe('import layers', () => {
  it.each([
    ['src/ladder/data/x.ts', "import {readRunState} from '../../steps/status.js'\nexport const x = readRunState\n", /src\/ladder may not import from .*src\/steps/],
    ['src/runtime/x.ts', "import {runLadder} from '../ladder/runner.js'\nexport const x = runLadder\n", /src\/runtime may not import from/],
    ['src/gym/x.ts', "import {loadContract} from '../contract/load.js'\nexport const x = loadContract\n", /src\/gym may not import from .*src\/contract/],
    ['src/steps/x.ts', "import {doctor} from '../doctor/doctor.js'\nexport const x = doctor\n", /src\/steps may not import from .*src\/doctor/],
    ['src/contract/x.ts', "import {BaseCommand} from '../cli/base-command.js'\nexport const x = BaseCommand\n", /src\/contract may not import from .*src\/cli/],
    ['src/ladder/x.ts', "import {execa} from 'execa'\nexport const x = execa\n", /through src\/runtime/],
    ['src/gym/call/x.ts', "import http from 'node:http'\nexport const x = http\n", /through src\/runtime/],
    ['src/steps/x.ts', "import {runLadder} from '../ladder/runner.js'\nexport const x = runLadder\n", /through its door, src\/ladder\/index\.ts/],
    ['src/cli/x.ts', "import {dataPlan} from '../ladder/data/source.js'\nexport const x = dataPlan\n", /through its door/],
    ['src/json/x.ts', "import {exportTasks} from '../gym/tasks/export.js'\nexport const x = exportTasks\n", /src\/json may not import from .*src\/gym/],
  ])('%s: an upward or outside-world import fails', async (file, code, message) => {
    expect(await layerErrors(file, code)).toEqual([expect.stringMatching(message)])
  })

  it.each([
    ['src/steps/x.ts', "import {runLadder} from '../ladder/index.js'\nexport const x = runLadder\n"],
    ['src/ladder/data/x.ts', "import {parseJson} from '../../json/index.js'\nimport {run} from '../../runtime/process.js'\nexport const x = [parseJson, run]\n"],
    ['src/runtime/x.ts', "import {execa} from 'execa'\nexport const x = execa\n"],
    ['src/json/x.ts', "import {openAtomicTarget} from '../runtime/fs.js'\nexport const x = openAtomicTarget\n"],
    ['src/ladder/x.ts', "import type Docker from 'dockerode'\nexport type X = Docker\n"],
  ])('%s: downward imports and type-only Docker imports pass', async (file, code) => {
    expect(await layerErrors(file, code)).toEqual([])
  })
})

describe('types in the product code', () => {
  const anyErrors = async (file: string) => {
    const [result] = await eslint.lintText('export function f(body: any): number {\n  return body.n\n}\n', {filePath: path.join(repoRoot, file)})
    return result.messages.filter((m) => m.ruleId === '@typescript-eslint/no-explicit-any').length
  }

  it('an explicit any fails the lint in src/, and is allowed in tests', async () => {
    expect(await anyErrors('src/gym/call/x.ts')).toBe(1)
    expect(await anyErrors('test/unit/x.test.ts')).toBe(0)
  })
})

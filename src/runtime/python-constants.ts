/**
 * Module-level constants of a Python file (NAME = <literal>), read with Python's own parser and
 * ast.literal_eval: nothing in the file runs. Names that are absent or not literals are left out.
 */
import {objectFields} from './http.js'
import {run} from './process.js'

const READER = `
import ast, json, sys
tree = ast.parse(open(sys.argv[1], encoding="utf-8").read(), sys.argv[1])
wanted = set(sys.argv[2:])
found = {}
for node in tree.body:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and node.targets[0].id in wanted:
        try:
            found[node.targets[0].id] = ast.literal_eval(node.value)
        except (ValueError, TypeError, SyntaxError, RecursionError):
            pass
print(json.dumps(found))
`

export async function pythonConstants(file: string, names: string[], env: NodeJS.ProcessEnv = process.env): Promise<{constants: Record<string, unknown>} | {error: string}> {
  const r = await run('python3', ['-c', READER, file, ...names], {env, timeout: 20_000})
  if (r.notFound) return {error: 'python3 is not on PATH'}
  if (r.exitCode !== 0) return {error: (r.stderr.trim().split('\n').at(-1) ?? `exit ${r.exitCode}`).slice(0, 200)}
  try {
    const value: unknown = JSON.parse(r.stdout)
    return {constants: objectFields(value)}
  } catch {
    return {error: 'python3 printed no JSON'}
  }
}

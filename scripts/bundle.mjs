// Run by `npm run build` after precompile: rewrites every command module in dist/commands/ as an
// ES module holding its own code and its dependencies' (code shared by several commands goes to
// dist/chunks/), so starting a command reads a few files instead of some 300 and Node resolves a
// few imports instead of hundreds. Nothing depends on it: after a bare `tsc` the commands run
// unbundled, only slower to start.
//
// dist/oclif-core.js is bundled with them, so bin/run.js and the commands share one copy of
// oclif. Left out: the Docker client (native add-ons), Ajv (only needed when a generated
// validator is stale) and TypeScript (oclif reads tsconfig.json with it in development only).
import * as esbuild from 'esbuild'
import {readdirSync, readFileSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const dist = path.join(repo, 'dist')
const commands = path.join(dist, 'commands')
// CommonJS dependencies require Node's built-ins; an ES module has no `require` of its own.
const banner = "import {createRequire as createRequireForBundle} from 'node:module'; const require = createRequireForBundle(import.meta.url);"
if (readFileSync(path.join(dist, 'oclif-core.js'), 'utf8').startsWith(banner)) {
  console.error('dist/ is bundled already (its bundles cannot be bundled again): run `npm run build`')
  process.exit(1)
}
const entryPoints = readdirSync(commands, {recursive: true, encoding: 'utf8'})
  .filter((file) => file.endsWith('.js'))
  .map((file) => path.join(commands, file))
  .concat(path.join(dist, 'oclif-core.js'))

const result = await esbuild.build({
  entryPoints,
  outdir: dist,
  outbase: dist,
  allowOverwrite: true,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  chunkNames: 'chunks/[name]-[hash]',
  external: ['dockerode', 'ajv', 'typescript'],
  banner: {js: banner},
  sourcemap: 'linked',
  // stack traces (node --enable-source-maps) need the positions, not a copy of every source
  sourcesContent: false,
  metafile: true,
  logLevel: 'warning',
})
const outputs = Object.entries(result.metafile.outputs).filter(([file]) => file.endsWith('.js'))
const bytes = outputs.reduce((sum, [, output]) => sum + output.bytes, 0)
console.log(`bundled: ${entryPoints.length - 1} commands and oclif into ${outputs.length} modules (${(bytes / 1024 / 1024).toFixed(1)} MB) → dist/commands/, dist/chunks/`)

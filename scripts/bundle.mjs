// Run by `npm run build` after precompile: rewrites every command module in dist/commands/ as an
// ES module holding its own code and its dependencies' (code shared by several commands goes to
// dist/chunks/), so starting a command reads a few files instead of some 300 and Node resolves a
// few imports instead of hundreds. Nothing depends on it: after a bare `tsc` the commands run
// unbundled, only slower to start.
//
// oclif becomes one CommonJS file, dist/oclif.cjs, and dist/oclif-core.js is rewritten to load it
// through src/precompiled.ts's loadCommonJs, so it starts from the V8 code cache that
// scripts/code-cache.mjs keeps (Node 20 keeps none for ES modules). bin/run.js starts oclif from
// dist/oclif-core.js and the bundles import it as `#oclif-core` (package.json "imports"), so the
// CLI and its commands share one copy. Left out: the Docker client (native add-ons), Ajv (only
// needed when a generated validator is stale) and TypeScript (oclif reads tsconfig.json with it
// in development only).
import * as esbuild from 'esbuild'
import {readdirSync, readFileSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const dist = path.join(repo, 'dist')
const commands = path.join(dist, 'commands')
const facade = path.join(dist, 'oclif-core.js')
const GENERATED = '// Written by scripts/bundle.mjs'
if (readFileSync(facade, 'utf8').startsWith(GENERATED)) {
  console.error('dist/ is bundled already (its bundles cannot be bundled again): run `npm run build`')
  process.exit(1)
}

// Source maps without the sources: stack traces (node --enable-source-maps) need only positions.
const shared = {bundle: true, platform: 'node', target: 'node20', sourcemap: 'linked', sourcesContent: false, logLevel: 'warning', metafile: true}

// oclif loads commands (and lilconfig config files) with `await import(path)`, which a script run
// by loadCommonJs may not call; it calls the `importModule` the loader gives it instead.
let rewrittenImports = 0
const importThroughLoader = {
  name: 'import-through-loader',
  setup(build) {
    build.onLoad({filter: /[\\/]node_modules[\\/](@oclif[\\/]core|lilconfig)[\\/].*\.js$/}, (args) => {
      // a literal name stays an import() for esbuild to bundle
      const contents = readFileSync(args.path, 'utf8').replace(/\bawait import\((?!\s*['"])/g, () => {
        rewrittenImports++
        return 'await importModule('
      })
      return {contents, loader: 'js'}
    })
  },
}
const oclif = await esbuild.build({
  ...shared,
  stdin: {contents: "module.exports = require('@oclif/core')", resolveDir: repo, sourcefile: 'oclif-core-bundle.cjs'},
  format: 'cjs',
  outfile: path.join(dist, 'oclif.cjs'),
  external: ['typescript'],
  plugins: [importThroughLoader],
})
const left = readFileSync(path.join(dist, 'oclif.cjs'), 'utf8').match(/\bimport\(\s*[^'"\s)]/g)
if (rewrittenImports === 0 || left) {
  console.error(`dist/oclif.cjs: ${rewrittenImports} import() calls rewritten, ${left?.length ?? 0} left (${left?.join(', ')}); oclif's code has changed shape`)
  process.exit(1)
}
const names = Object.keys(createRequire(import.meta.url)('@oclif/core'))
writeFileSync(
  facade,
  `${GENERATED}: oclif from dist/oclif.cjs, loaded with its code cache.
import {fileURLToPath} from 'node:url'
import {loadCommonJs} from './precompiled.js'
const oclif = loadCommonJs(fileURLToPath(new URL('./oclif.cjs', import.meta.url))).exports
export const {${names.join(', ')}} = oclif
`,
)

const entryPoints = readdirSync(commands, {recursive: true, encoding: 'utf8'})
  .filter((file) => file.endsWith('.js'))
  .map((file) => path.join(commands, file))
const sharedOclif = {
  name: 'shared-oclif',
  setup(build) {
    build.onResolve({filter: /^@oclif\/core$/}, () => ({path: '#oclif-core', external: true}))
  },
}
const result = await esbuild.build({
  ...shared,
  entryPoints,
  outdir: dist,
  outbase: dist,
  allowOverwrite: true,
  splitting: true,
  format: 'esm',
  chunkNames: 'chunks/[name]-[hash]',
  external: ['dockerode', 'ajv', 'typescript'],
  plugins: [sharedOclif],
  // CommonJS dependencies require Node's built-ins; an ES module has no `require` of its own.
  banner: {js: "import {createRequire as createRequireForBundle} from 'node:module'; const require = createRequireForBundle(import.meta.url);"},
})
const outputs = [...Object.entries(result.metafile.outputs), ...Object.entries(oclif.metafile.outputs)].filter(([file]) => /\.c?js$/.test(file))
const bytes = outputs.reduce((sum, [, output]) => sum + output.bytes, 0)
console.log(`bundled: ${entryPoints.length} commands into ${outputs.length} modules and oclif into dist/oclif.cjs (${(bytes / 1024 / 1024).toFixed(1)} MB)`)

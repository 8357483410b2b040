// Run by `npm run build` after precompile: rewrites every command in dist/commands/ as CommonJS
// bundles of its code and its dependencies' (dist/bundles/<command>.cjs, code shared by commands
// in dist/bundles/chunks/), so starting a command reads a few files instead of some 300, and
// from the V8 code cache scripts/code-cache.mjs keeps beside each (Node 20 keeps none for ES
// modules). dist/commands/<command>.js, what oclif imports, becomes a small ES module that runs
// the bundle through src/precompiled.ts's loadCommonJs and hands it the process's oclif and
// loader. Nothing depends on it: after a bare `tsc` the commands run unbundled, only slower to
// start.
//
// oclif becomes one CommonJS file too, dist/oclif.cjs, and dist/oclif-core.js is rewritten to load
// it the same way; bin/run.js starts oclif from dist/oclif-core.js and the command facades import
// it as `#oclif-core` (package.json "imports"), so the CLI and its commands share one copy. Left
// out: the Docker client (native add-ons), Ajv (only needed when a generated validator is stale)
// and TypeScript (oclif reads tsconfig.json with it in development only). Every file is minified
// but for names (the linked source maps give positions): less to read and hash.
import * as esbuild from 'esbuild'
import {readdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
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
// oclif sorts each plugin's command IDs with localeCompare, and the first localeCompare in a
// process sets up ICU's collator: 7 ms of every start-up, to order IDs that are lowercase ASCII
// (test/e2e/build.test.ts checks they are), where code-point order is the same.
const LOCALE_SORT = '.sort((a, b) => a.id.localeCompare(b.id))'
let rewrittenSorts = 0
const oclifForLoader = {
  name: 'oclif-for-loader',
  setup(build) {
    build.onLoad({filter: /[\\/]node_modules[\\/](@oclif[\\/]core|lilconfig)[\\/].*\.js$/}, (args) => {
      // a literal name stays an import() for esbuild to bundle
      let contents = readFileSync(args.path, 'utf8').replace(/\bawait import\((?!\s*['"])/g, () => {
        rewrittenImports++
        return 'await importModule('
      })
      if (contents.includes(LOCALE_SORT)) {
        rewrittenSorts++
        contents = contents.replace(LOCALE_SORT, '.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))')
      }
      return {contents, loader: 'js'}
    })
  },
}
const oclif = await esbuild.build({
  ...shared,
  stdin: {contents: "module.exports = require('@oclif/core')", resolveDir: repo, sourcefile: 'oclif-core-bundle.cjs'},
  format: 'cjs',
  outfile: path.join(dist, 'oclif.cjs'),
  minifyWhitespace: true,
  minifySyntax: true,
  external: ['typescript'],
  plugins: [oclifForLoader],
})
const left = readFileSync(path.join(dist, 'oclif.cjs'), 'utf8').match(/\bimport\(\s*[^'"\s)]/g)
if (rewrittenImports === 0 || left || rewrittenSorts !== 1) {
  console.error(`dist/oclif.cjs: ${rewrittenImports} import() calls rewritten, ${left?.length ?? 0} left (${left?.join(', ')}), ${rewrittenSorts} command sorts rewritten (1 expected); oclif's code has changed shape`)
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
  .map((file) => file.slice(0, -'.js'.length))
// oclif and the code-cache loader are the facade's copies, handed to the bundle: one of each per
// process (the loader keeps what it loaded, and calls import() for oclif, which a bundle may not).
const provided = {
  name: 'provided-by-facade',
  setup(build) {
    build.onResolve({filter: /^@oclif\/core$/}, () => ({path: '#oclif-core', external: true}))
    build.onResolve({filter: /[\\/]precompiled\.js$/}, () => ({path: '#precompiled', external: true}))
  },
}
const bundles = path.join(dist, 'bundles')
// Two passes: esbuild splits code shared by commands into chunks only for ES modules, so the
// commands are bundled as ES modules first, then each output file is rewritten as CommonJS
// (the source maps carry through both). Chunks are required by relative name, which the loader
// answers with the chunk run from its own cache; `import()` of a chunk becomes a require.
const split = path.join(dist, '.bundles-esm')
const modules = await esbuild.build({
  ...shared,
  entryPoints: entryPoints.map((name) => ({in: path.join(commands, `${name}.js`), out: name})),
  outdir: split,
  outExtension: {'.js': '.cjs'},
  splitting: true,
  format: 'esm',
  chunkNames: 'chunks/[name]-[hash]',
  // ws loads these optional native helpers only when they are installed.
  external: ['dockerode', 'ajv', 'typescript', 'bufferutil', 'utf-8-validate'],
  plugins: [provided],
})
const result = await esbuild.build({
  ...shared,
  bundle: false,
  entryPoints: Object.keys(modules.metafile.outputs).filter((file) => file.endsWith('.cjs')),
  outbase: split,
  outdir: bundles,
  outExtension: {'.js': '.cjs'},
  format: 'cjs',
  supported: {'dynamic-import': false},
  minifyWhitespace: true,
  minifySyntax: true,
  // the module's own address, for code that finds package files from it (src/package-root.ts)
  define: {'import.meta.url': 'moduleUrl'},
  banner: {js: "const moduleUrl = require('node:url').pathToFileURL(__filename).href;"},
})
rmSync(split, {recursive: true})
for (const [file] of Object.entries(result.metafile.outputs).filter(([name]) => name.endsWith('.cjs'))) {
  const left = readFileSync(file, 'utf8').match(/\bimport\(/g)
  if (left) {
    console.error(`${file}: ${left.length} import() calls, which a script run by loadCommonJs may not make`)
    process.exit(1)
  }
}
// What oclif imports for each command: an ES module that runs the bundle and hands it oclif.
for (const name of entryPoints) {
  const up = '../'.repeat(name.split('/').length)
  writeFileSync(
    path.join(commands, `${name}.js`),
    `${GENERATED}: the command from dist/bundles/${name}.cjs, loaded with its code cache.
import * as oclif from '#oclif-core'
import {fileURLToPath} from 'node:url'
import * as precompiled from '${up}precompiled.js'
const bundle = fileURLToPath(new URL('${up}bundles/${name}.cjs', import.meta.url))
export default precompiled.loadCommonJs(bundle, {'#oclif-core': oclif, '#precompiled': precompiled}).exports.default
`,
  )
}
const outputs = [...Object.entries(result.metafile.outputs), ...Object.entries(oclif.metafile.outputs)].filter(([file]) => /\.c?js$/.test(file))
const bytes = outputs.reduce((sum, [, output]) => sum + output.bytes, 0)
console.log(`bundled: ${entryPoints.length} commands and oclif into dist/bundles and dist/oclif.cjs (${(bytes / 1024 / 1024).toFixed(1)} MB)`)

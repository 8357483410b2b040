#!/usr/bin/env node
// `--version` is answered without loading oclif and its plugins: it is the one command scripts
// call in loops, and oclif's start-up would triple its cost. The output matches oclif's.
if (process.argv.length === 3 && (process.argv[2] === '--version' || process.argv[2] === '-v')) {
  const {readFileSync} = await import('node:fs')
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  process.stdout.write(`${pkg.name}/${pkg.version} ${process.platform}-${process.arch} node-${process.version}\n`)
} else {
  // oclif wraps messages at 80 columns when stderr is not a terminal, which splits file paths
  // in CI logs and in anything that greps them; wrap only on a real terminal.
  if (!process.stderr.isTTY && process.env.OCLIF_COLUMNS === undefined) process.env.OCLIF_COLUMNS = '10000'
  // An unknown command is a usage error (exit 2, as documented); oclif's not-found plugin uses 127.
  process.on('exit', (code) => {
    if (code === 127) process.exitCode = 2
  })
  // oclif checks Node against its own engines range, older than ours (package.json engines), when
  // it is imported, and loads semver to do it: about 20 ms of every start-up. The variable is not
  // left for the processes a command starts.
  const skipEngineCheck = process.env.OCLIF_DISABLE_ENGINE_WARNING === undefined
  if (skipEngineCheck) process.env.OCLIF_DISABLE_ENGINE_WARNING = '1'
  const {execute} = await import('../dist/oclif-core.js')
  if (skipEngineCheck) delete process.env.OCLIF_DISABLE_ENGINE_WARNING
  await execute({dir: import.meta.url})
}

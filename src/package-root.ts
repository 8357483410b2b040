/**
 * Where the package's own files are (recipes/, templates/, dist/), found as the nearest directory
 * above this module that holds package.json. It is the same whether the code runs from src/
 * (tests), from dist/ as compiled, or from the command bundles the build writes (which move this
 * code to another depth under dist/), so no module counts `..` from its own location.
 */
import {existsSync} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

function nearestPackageRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir
    if (path.dirname(dir) === dir) throw new Error(`gymrecipe's package.json was not found above ${from}`)
  }
}

export const PACKAGE_ROOT = nearestPackageRoot(path.dirname(fileURLToPath(import.meta.url)))

/**
 * A file of the build (`dist/…`), or undefined when running from TypeScript sources: the sources
 * never pick up a build that may be older than they are.
 */
export function builtFile(relative: string): string | undefined {
  return import.meta.url.endsWith('.ts') ? undefined : path.join(PACKAGE_ROOT, 'dist', relative)
}

#!/usr/bin/env node
/**
 * The shape of src/ as a newcomer meets it: files over 400 lines and functions over 80 lines
 * (declarations, methods and function values, measured on the TypeScript syntax tree).
 *
 *   npm run layout [-- --files 400 --functions 80]
 */
import {execFileSync} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {parseArgs} from 'node:util'
import ts from 'typescript'

const {values} = parseArgs({options: {files: {type: 'string', default: '400'}, functions: {type: 'string', default: '80'}}})
const fileLimit = Number(values.files)
const functionLimit = Number(values.functions)
const files = execFileSync('git', ['ls-files', 'src/*.ts'], {encoding: 'utf8'}).trim().split('\n').filter(Boolean)

const longFiles = []
const longFunctions = []
for (const file of files) {
  const text = readFileSync(file, 'utf8')
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0)
  if (lines > fileLimit) longFiles.push([lines, file])
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const visit = (node) => {
    const isFunction = ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isArrowFunction(node) || ts.isFunctionExpression(node) || ts.isConstructorDeclaration(node)
    if (isFunction && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart()).line
      const last = source.getLineAndCharacterOfPosition(node.end).line
      const name = node.name?.getText() ?? (ts.isVariableDeclaration(node.parent) || ts.isPropertyAssignment(node.parent) ? node.parent.name.getText() : '(anonymous)')
      if (last - first + 1 > functionLimit) longFunctions.push([last - first + 1, `${file}:${first + 1} ${name}`])
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
}
const byLength = (a, b) => b[0] - a[0]
console.log(`${files.length} files in src/; ${longFiles.length} over ${fileLimit} lines:`)
for (const [n, what] of longFiles.sort(byLength)) console.log(`  ${String(n).padStart(5)}  ${what}`)
console.log(`${longFunctions.length} functions over ${functionLimit} lines:`)
for (const [n, what] of longFunctions.sort(byLength)) console.log(`  ${String(n).padStart(5)}  ${what}`)

import ts from 'typescript'; import fs from 'node:fs'; import {execSync} from 'node:child_process'
const files = execSync("git ls-files 'src/*.ts' 'scripts/*.ts' 'test/helpers/*.ts'", {encoding: 'utf8'}).trim().split('\n')
const out = []
for (const f of files) {
  const sf = ts.createSourceFile(f, fs.readFileSync(f, 'utf8'), ts.ScriptTarget.Latest, true)
  const visit = (n) => {
    if ((ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n) || ts.isArrowFunction(n) || ts.isFunctionExpression(n)) && n.body) {
      const a = sf.getLineAndCharacterOfPosition(n.getStart()).line, b = sf.getLineAndCharacterOfPosition(n.end).line
      const name = n.name?.getText() ?? (ts.isVariableDeclaration(n.parent) ? n.parent.name.getText() : '<anon>')
      if (b - a + 1 > 80) out.push([b - a + 1, `${f}:${a + 1} ${name}`])
    }
    ts.forEachChild(n, visit)
  }
  visit(sf)
}
for (const [n, s] of out.sort((x, y) => y[0] - x[0])) console.log(n, s)

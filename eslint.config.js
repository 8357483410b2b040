import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  {ignores: ['dist/', 'node_modules/', 'coverage/', '.bench-work/', 'test/fixtures/**/*.py', '**/*.d.ts']},
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', URL: 'readonly', fetch: 'readonly', AbortController: 'readonly', AbortSignal: 'readonly', TextDecoder: 'readonly', TextEncoder: 'readonly', Response: 'readonly', Headers: 'readonly', structuredClone: 'readonly', setImmediate: 'readonly', clearImmediate: 'readonly', queueMicrotask: 'readonly', performance: 'readonly', URLSearchParams: 'readonly', ReadableStream: 'readonly', WritableStream: 'readonly', TransformStream: 'readonly', Blob: 'readonly', FormData: 'readonly', Request: 'readonly', DOMException: 'readonly', NodeJS: 'readonly'},
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', {argsIgnorePattern: '^_', varsIgnorePattern: '^_'}],
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  // The product's code says what it handles: parsed JSON is `unknown` until checked. Tests may poke at documents freely.
  {files: ['src/**/*.ts'], rules: {'@typescript-eslint/no-explicit-any': 'error'}},
  ...layerRules(),
)

/**
 * The layers of src/, top to bottom; folders that share a layer are independent of each other.
 * A file may import from its own folder and the layers below it, never from one above; the
 * outside world (processes, Docker, HTTP) is reached only from src/runtime. `npm run lint`
 * (part of `npm test`) fails on a violation.
 */
function layerRules() {
  const layers = [['commands'], ['cli'], ['steps', 'doctor'], ['ladder'], ['scaffold', 'recipe'], ['contract', 'gym'], ['json'], ['runtime']]
  const outsideWorld = ['execa', 'dockerode', 'node:child_process', 'node:http', 'node:https', 'node:dgram', 'node:tls']
  return layers.flatMap((layer, rank) =>
    layer.map((folder) => {
      const forbidden = [...layers.slice(0, rank).flat(), ...layer.filter((other) => other !== folder)]
      const patterns = []
      if (forbidden.length > 0) {
        patterns.push({regex: `^(\\.\\./)+(${forbidden.join('|')})/`, message: `src/${folder} may not import from src/${forbidden.join(', src/')} (layers: ${layers.map((l) => l.join('+')).join(' → ')}); move the shared code down instead.`})
      }
      if (folder !== 'runtime') patterns.push({group: outsideWorld, allowTypeImports: true, message: 'Processes, Docker and HTTP are reached through src/runtime.'})
      // Above the ladder, only its door: a rung's insides stay its own.
      if (rank < layers.findIndex((l) => l.includes('ladder'))) patterns.push({regex: '^(\\.\\./)+ladder/(?!index\\.js$)', message: 'Import the ladder through its door, src/ladder/index.ts.'})
      return {files: [`src/${folder}/**/*.ts`], rules: {'@typescript-eslint/no-restricted-imports': ['error', {patterns}]}}
    }),
  )
}

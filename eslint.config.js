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
)

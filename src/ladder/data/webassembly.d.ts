// Node has WebAssembly as a global; TypeScript declares it only in its DOM and worker libraries.
// What the string skipper uses of it:
declare namespace WebAssembly {
  class Module {
    constructor(bytes: ArrayBufferView | ArrayBuffer)
  }
  class Instance {
    constructor(module: Module, imports?: object)
    readonly exports: Record<string, unknown>
  }
  class Memory {
    readonly buffer: ArrayBuffer
    grow(pages: number): number
  }
}

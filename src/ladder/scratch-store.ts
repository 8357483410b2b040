/**
 * Values one ladder run computes once and shares between its checks, each under a typed key, so
 * the compiler checks what is stored against what is read.
 */
export class ScratchKey<T> {
  /** Phantom: ties the key to the type of its value. */
  declare readonly valueType?: T
  constructor(readonly name: string) {}
}

export class Scratch {
  private readonly values = new Map<ScratchKey<unknown>, unknown>()

  get<T>(key: ScratchKey<T>): T | undefined {
    return this.values.get(key) as T | undefined
  }

  set<T>(key: ScratchKey<T>, value: T): void {
    this.values.set(key, value)
  }

  has(key: ScratchKey<unknown>): boolean {
    return this.values.has(key)
  }
}

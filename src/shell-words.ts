/** Quoting for bash: what the generated scripts embed and what gymrecipe prints for copy-pasting. */

/** Single-quote a value for bash; the only character needing care inside '' is ' itself. */
export function shellQuote(value: unknown): string {
  return `'${String(value).replaceAll("'", `'\\''`)}'`
}

/** A word as a person would type it: quoted only when the shell needs it. */
export function shellWord(value: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(value) ? value : shellQuote(value)
}

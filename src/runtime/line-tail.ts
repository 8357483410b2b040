/**
 * The last lines of a stream of text that arrives in pieces: complete lines kept up to a limit,
 * the unfinished last one included when asked. Script output is kept this way for failure
 * reports, per stream for documents and interleaved for what a person did not see scroll by.
 */
export class LineTail {
  private readonly lines: string[] = []
  private partial = ''
  /** Complete lines seen so far (blank ones included). */
  count = 0

  constructor(private readonly keep: number) {}

  /** Add a piece of text; returns the lines it completed. */
  write(text: string): string[] {
    const pieces = (this.partial + text).split('\n')
    this.partial = pieces.pop() ?? ''
    const complete = pieces.map((line) => line.replace(/\r$/, ''))
    this.count += complete.length
    this.lines.push(...complete)
    if (this.lines.length > this.keep) this.lines.splice(0, this.lines.length - this.keep)
    return complete
  }

  /** The last `count` lines, the unfinished one last; blank lines dropped when asked. */
  last(count = this.keep, options: {skipBlank?: boolean} = {}): string[] {
    const all = this.partial ? [...this.lines, this.partial] : [...this.lines]
    return (options.skipBlank ? all.filter((line) => line.trim() !== '') : all).slice(-count)
  }
}

import {open} from 'node:fs/promises'

/**
 * Non-blank lines of a file (lines with a byte other than space, tab or CR), the way
 * convert_dataset.py and `awk NF` count rows. A line is usually decided by its first byte,
 * and newlines are found natively, so this runs at close to read speed in constant memory.
 */
export async function countNonBlankLines(file: string, signal?: AbortSignal): Promise<number> {
  const handle = await open(file, 'r')
  try {
    const buffer = Buffer.allocUnsafe(1024 * 1024)
    let count = 0
    let lineHasContent = false
    for (;;) {
      signal?.throwIfAborted()
      const {bytesRead} = await handle.read(buffer, 0, buffer.length, null)
      if (bytesRead === 0) break
      let i = 0
      while (i < bytesRead) {
        if (!lineHasContent) {
          const byte = buffer[i]
          if (byte === 0x0a) {
            i++
            continue
          }
          if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) lineHasContent = true
          else {
            i++
            continue
          }
        }
        const newline = buffer.indexOf(0x0a, i)
        if (newline === -1 || newline >= bytesRead) break
        count++
        lineHasContent = false
        i = newline + 1
      }
    }
    return lineHasContent ? count + 1 : count
  } finally {
    await handle.close()
  }
}

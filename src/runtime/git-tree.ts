/**
 * Files of a git checkout at a given commit, read with git itself (never the working tree):
 * what a Gym checkout held at the commit a recipe pins.
 */
import {createHash} from 'node:crypto'
import {promises as fsp} from 'node:fs'
import path from 'node:path'

/** Whether `root` is the top of a git work tree (a `.git` directory or file there). */
export async function hasGit(root: string): Promise<boolean> {
  return fsp.stat(path.join(root, '.git')).then(() => true, () => false)
}

async function git(root: string, args: string[]): Promise<{exitCode: number | undefined; stdout: Buffer}> {
  const {execa} = await import('execa')
  const result = await execa('git', ['-C', root, ...args], {reject: false, encoding: 'buffer', stripFinalNewline: false, timeout: 60_000})
  return {exitCode: result.exitCode, stdout: Buffer.from(result.stdout ?? new Uint8Array())}
}

/** Whether the commit exists in the checkout's history. */
export async function commitExists(root: string, commit: string): Promise<boolean> {
  return (await git(root, ['cat-file', '-e', `${commit}^{commit}`])).exitCode === 0
}

/** sha256 of a file as the commit holds it, or undefined when the commit has no such file. */
export async function fileSha256AtCommit(root: string, commit: string, file: string): Promise<string | undefined> {
  const shown = await git(root, ['show', `${commit}:${file}`])
  if (shown.exitCode !== 0) return undefined
  return createHash('sha256').update(shown.stdout).digest('hex')
}

/** sha256 of a file of the working tree, or undefined when there is none. */
export async function fileSha256(root: string, file: string): Promise<string | undefined> {
  const data = await fsp.readFile(path.join(root, file)).catch(() => undefined)
  return data === undefined ? undefined : createHash('sha256').update(data).digest('hex')
}

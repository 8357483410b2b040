/** The start script: a private Ray of its own, and ownership of the shared storage checked before writing. */

import type {Check, CheckOutcome, NamedResult} from '../types.js'
import {recipeFiles} from './recipe-files.js'
import {launcherRole, type LoadedFile} from '../../recipe/files.js'

// ------------------------------------------------------------------ launchers

export const startIsolatesRay: Check = {
  id: 'static.start-private-ray',
  title: 'the start script unsets RAY_ADDRESS and RAY_JOB_SUBMISSION_ID before its private Ray',
  async run(ctx) {
    const {launchers} = await recipeFiles(ctx)
    const out: NamedResult[] = []
    const add = (file: string, o: CheckOutcome) => out.push({id: this.id, title: this.title, file, ...o})
    if (!launchers.some((start) => launcherRole(start).startsRay)) {
      return {status: 'fail', message: 'no launcher starts a private Gym Ray (`ray start --head`)', hint: 'Gym must run on its own Ray, never the Relax cluster.'}
    }
    for (const start of launchers) {
      const role = launcherRole(start)
      if (!role.startsRay) {
        if (role.startsGym) add(start.name, {status: 'pass', message: 'starts no Ray of its own: it attaches to the Ray it is run under'})
        continue
      }
      const rayStart = start.lines.find((l) => /\bray["']?\s+start\b/.test(l.text))!
      const unsets = start.lines.filter((l) => /(?:^|;|&&|\s)unset\s/.test(l.text))
      const unsetAddress = unsets.find((l) => /\bRAY_ADDRESS\b/.test(l.text))
      const unsetSubmission = unsets.find((l) => /\bRAY_JOB_SUBMISSION_ID\b/.test(l.text))
      const problems: CheckOutcome[] = []
      if (!unsetAddress) problems.push({status: 'fail', message: `RAY_ADDRESS is not unset before ray start (line ${rayStart.line})`, line: rayStart.line, hint: 'An inherited RAY_ADDRESS attaches Gym to the Relax cluster.'})
      if (!unsetSubmission) problems.push({status: 'fail', message: `RAY_JOB_SUBMISSION_ID is not unset before ray start (line ${rayStart.line})`, line: rayStart.line})
      for (const u of [unsetAddress, unsetSubmission]) {
        if (u && u.line > rayStart.line) problems.push({status: 'fail', message: `unset at line ${u.line} comes after ray start`, line: u.line})
      }
      if (problems.length === 0) add(start.name, {status: 'pass', message: `unset at line ${unsetAddress!.line}, ray start at line ${rayStart.line}`})
      for (const p of problems) add(start.name, p)
    }
    return out
  },
}

/** Where the README starts the service container by hand, when no script does. */
function readmeDockerRun(readme: LoadedFile | undefined): string | undefined {
  if (!readme) return undefined
  const at = readme.text.split('\n').findIndex((l) => /\bdocker\s+(?:run|create)\b/.test(l) && !/--rm\b/.test(l))
  return at < 0 ? undefined : `${readme.name}:${at + 1}`
}

export const startChecksOwnership: Check = {
  id: 'static.start-ownership',
  title: 'the start script labels its container and checks the label before replacing it',
  async run(ctx) {
    const files = await recipeFiles(ctx)
    const creators = files.launchers.filter((f) => launcherRole(f).createsContainer)
    if (creators.length === 0) {
      const where = readmeDockerRun(files.byRole.readme)
      return {
        status: 'skip',
        message: `not checked: no script creates the service container${where ? `; ${where} starts it with a hand-typed docker run` : ''}, so nothing checks whose container it replaces`,
        hint: 'A host-side launcher that creates the container with --label ai.relax.recipe=<recipe> and refuses to replace a container with another label makes this checkable.',
      }
    }
    const out: NamedResult[] = []
    for (const start of creators) {
      const problems: CheckOutcome[] = []
      const create = start.lines.find((l) => /\bdocker\s+(?:container\s+)?(?:create|run)\b/.test(l.text) && !/--rm\b/.test(l.text))
      const labelled = start.lines.some((l) => /--label[\s=]+["']?ai\.relax\.recipe=/.test(l.text))
      const read = start.lines.find((l) => /inspect\b.*ai\.relax\.recipe/.test(l.text))
      const removal = start.lines.find((l) => /\bdocker\s+(?:container\s+)?rm\b/.test(l.text) && !/on_interrupt|NEW_ID/.test(l.text))
      if (!labelled) problems.push({status: 'fail', message: 'the container is not created with --label ai.relax.recipe=<recipe>', line: create?.line, hint: 'Without the label nobody can tell whose container it is.'})
      if (!read) problems.push({status: 'fail', message: `the existing container's ai.relax.recipe label is never read${removal ? `, yet line ${removal.line} removes any container with that name` : ''}`, line: removal?.line, hint: 'Inspect the label and refuse to replace a container another recipe owns.'})
      if (read && removal && read.line > removal.line) problems.push({status: 'fail', message: `a container is removed at line ${removal.line} before its label is checked at line ${read.line}`, line: removal.line})
      if (read) {
        const after = start.lines.filter((l) => l.line > read.line && (!removal || l.line < removal.line))
        if (!after.some((l) => /\bexit\s+[1-9]/.test(l.text))) problems.push({status: 'fail', message: 'a foreign label does not stop the script (no exit between the label check and the removal)', line: read.line})
      }
      if (problems.length === 0) out.push({id: this.id, title: this.title, file: start.name, status: 'pass', message: `label read at line ${read!.line}, container replaced only after`})
      out.push(...problems.map((p) => ({id: this.id, title: this.title, file: start.name, ...p})))
    }
    return out
  },
}

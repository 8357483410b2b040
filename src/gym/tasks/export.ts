import {BACKSLASH, COLON, QUOTE} from '../../json/chars.js'
import {POLICY_MESSAGES} from '../../json/input-policy.js'
import {type ByteMembers, KeySlots, ReusedObjectScan} from '../../json/byte-scan.js'
import {FieldError, jsonKind, LineBuilder, locate, nonFiniteField, rawString, type ReadProgress, readJsonlBatches, type ScannedObject, scanObjectLine, withJsonlOutput} from '../../json/index.js'
import {isEncodableId, taskIndexOf} from './identity.js'
import {checkGymTask, kindsOfRaw, MANAGED_TASK_FIELDS} from './task.js'

/**
 * Scenario bundle → Gym-native task: the task's own members (top-level nulls
 * dropped, `responses_create_params` and `agent_ref` first), then `id` (only
 * when the task has none), `_ng_task_index`, `_dd_scenario_id` and
 * `_dd_provenance` (only when non-empty). Member values are copied as their
 * exact source text, so numbers are never re-spelled.
 */

const BUNDLE_FIELDS = ['schema_version', 'scenario_id', 'task', 'provenance']
const EMPTY_OBJECT = /^\{\s*\}$/

function required(members: Map<string, string>, key: string): string {
  const raw = members.get(key)
  if (raw === undefined) throw new FieldError(key, 'is required')
  return raw
}

function scenarioIdOf(members: Map<string, string>): string {
  const raw = required(members, 'scenario_id')
  if (jsonKind(raw) !== 'string') throw new FieldError('scenario_id', 'must be a string')
  const id = rawString(raw)
  if (id === '') throw new FieldError('scenario_id', 'must not be empty')
  if (!isEncodableId(id)) throw new FieldError('scenario_id', 'must be valid Unicode (it contains a lone surrogate)')
  return id
}

function taskOf(task: Map<string, string> | undefined): Map<string, string> {
  checkGymTask(task && kindsOfRaw(task), 'task')
  return task as Map<string, string>
}

function member(key: string, rawValue: string): string {
  return `,${JSON.stringify(key)}:${rawValue}`
}

/** True when the task text already has the plugin's member order and no top-level null. */
function isDumped(task: Map<string, string>): boolean {
  let position = 0
  for (const [key, raw] of task) {
    if (raw === 'null' || (position === 0 && key !== 'responses_create_params') || (key === 'agent_ref' && position !== 1)) return false
    position++
  }
  return true
}

/** The task's members as the plugin dumps them (declared fields first, top-level nulls dropped), without braces. */
function dumpedMembers(task: Map<string, string>, taskText: string): string {
  if (isDumped(task)) return taskText.slice(taskText.indexOf('{') + 1, taskText.lastIndexOf('}'))
  let out = member('responses_create_params', task.get('responses_create_params') as string)
  const agentRef = task.get('agent_ref')
  if (agentRef !== undefined && agentRef !== 'null') out += member('agent_ref', agentRef)
  for (const [key, raw] of task) {
    if (key !== 'responses_create_params' && key !== 'agent_ref' && raw !== 'null') out += member(key, raw)
  }
  return out.slice(1)
}

/** Export one bundle line, scanned with its task's members split (scanObjectLine(line, file, 'task')). Throws FieldError. */
export function exportBundle({members: bundle, hasNonFinite, nested}: ScannedObject): string {
  for (const key of bundle.keys()) {
    if (!BUNDLE_FIELDS.includes(key)) throw new FieldError(key, `unknown field; a scenario bundle has only ${BUNDLE_FIELDS.join(', ')}`)
  }
  const version = bundle.get('schema_version')
  if (version !== undefined && (jsonKind(version) !== 'string' || rawString(version) !== '1')) throw new FieldError('schema_version', 'must be the string "1"')
  const scenarioId = scenarioIdOf(bundle)
  const taskText = required(bundle, 'task')
  const task = taskOf(nested)
  const provenance = bundle.get('provenance')
  if (provenance !== undefined && jsonKind(provenance) !== 'object') throw new FieldError('provenance', 'must be a JSON object')
  // The bundle's other members are strings, so a non-finite number is in the task or the provenance.
  if (hasNonFinite) {
    const field = nonFiniteField(taskText, 'task') ?? nonFiniteField(provenance as string, 'provenance')
    throw new FieldError(field, POLICY_MESSAGES.nonFinite)
  }

  const index = taskIndexOf(scenarioId).toString()
  const id = task.get('id')
  let out = `{${dumpedMembers(task, taskText)}`
  if (id === undefined || id === 'null') out += `,"id":${index}`
  out += `,"_ng_task_index":${index},"_dd_scenario_id":${bundle.get('scenario_id')}`
  if (provenance !== undefined && !EMPTY_OBJECT.test(provenance)) out += `,"_dd_provenance":${provenance}`
  return `${out}}`
}

// The byte path: bundles as `tasks build` writes them, exported without decoding them.

const OPEN = Buffer.from('{')
const COLON_PIECE = Buffer.from(':')
const COMMA_PIECE = Buffer.from(',')
const CLOSE = Buffer.from('}')
const ID_KEY = Buffer.from(',"id":')
const TASK_INDEX_KEY = Buffer.from(',"_ng_task_index":')
const SCENARIO_ID_KEY = Buffer.from(',"_dd_scenario_id":')
const PROVENANCE_KEY = Buffer.from(',"_dd_provenance":')

const BUNDLE_SLOTS = new KeySlots(BUNDLE_FIELDS)
const bundleSlots = new Int32Array(BUNDLE_FIELDS.length)
/** The task keys the byte path reads, then those a task must not have. */
const READ_TASK_KEYS = ['responses_create_params', 'agent_ref', 'id']
const TASK_SLOTS = new KeySlots([...READ_TASK_KEYS, ...MANAGED_TASK_FIELDS])
const taskSlots = new Int32Array(TASK_SLOTS.keys.length)

/** checkGymTask's rules on the located task keys; false leaves the task to checkGymTask on the text path. */
function passesGymTask(task: ByteMembers, params: number, agentRef: number): boolean {
  for (let k = READ_TASK_KEYS.length; k < taskSlots.length; k++) if (taskSlots[k] !== -1) return false
  if (params === -1 || !task.isObjectAt(params)) return false
  return agentRef === -1 || task.isNullAt(agentRef) || task.isObjectAt(agentRef)
}

/** Whether bytes[start, end) are the JSON string "1" written plainly. */
function isStringOne(bytes: Buffer, start: number, end: number): boolean {
  return end - start === 3 && bytes[start] === QUOTE && bytes[start + 1] === 0x31
}

function holdsEscape(bytes: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (bytes[i] === BACKSLASH) return true
  return false
}

/** Whether the object at m holds only whitespace between its braces (it is valid JSON: nothing else can make it empty). */
function isEmptyObjectAt(members: ByteMembers, m: number): boolean {
  const {bytes} = members
  for (let i = members.valueStart(m) + 1; i < members.valueEnd(m) - 1; i++) {
    const c = bytes[i]
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return false
  }
  return true
}

/**
 * Writes a task's members as dumpedMembers does (`"key":value`, comma-separated), copied from the
 * line's bytes: members next to each other in the line, written without spaces, go as one copy.
 */
class MemberCopier {
  private runStart = -1
  private runEnd = -1
  private count = 0

  begin(): void {
    this.runStart = -1
    this.count = 0
  }

  add(task: ByteMembers, m: number, out: LineBuilder): void {
    const {bytes} = task
    const keyOpen = task.keyStart(m) - 1
    const keyClose = task.keyEnd(m) + 1
    const valueStart = task.valueStart(m)
    const valueEnd = task.valueEnd(m)
    const tight = bytes[keyClose] === COLON && valueStart === keyClose + 1
    // the one byte between a member's value and the next key can only be the comma
    if (tight && this.runStart !== -1 && keyOpen === this.runEnd + 1) {
      this.runEnd = valueEnd
      this.count++
      return
    }
    this.flush(bytes, out)
    if (this.count++ > 0) out.bytes(COMMA_PIECE)
    if (tight) {
      this.runStart = keyOpen
      this.runEnd = valueEnd
    } else {
      out.bytes(bytes, keyOpen, keyClose)
      out.bytes(COLON_PIECE)
      out.bytes(bytes, valueStart, valueEnd)
    }
  }

  end(task: ByteMembers, out: LineBuilder): void {
    this.flush(task.bytes, out)
  }

  private flush(bytes: Buffer, out: LineBuilder): void {
    if (this.runStart !== -1) out.bytes(bytes, this.runStart, this.runEnd)
    this.runStart = -1
  }
}

/** What exportBundleBytes reuses from line to line, writing to one LineBuilder. */
export class BundleScanner {
  readonly scan = new ReusedObjectScan()
  readonly copier = new MemberCopier()
}

/**
 * exportBundle on a line's bytes, for bundles whose keys are plain and distinct (what `tasks
 * build` writes): appends the exported line to `out`, copying the task, the scenario ID and
 * the provenance as the bytes they were read as. False when the line is anything else, invalid
 * included: the text path then decides, so verdicts, messages and output are the text path's.
 */
export function exportBundleBytes(bytes: Buffer, out: LineBuilder, scanner = new BundleScanner()): boolean {
  const scanned = scanner.scan.scan(bytes, 'task')
  if (!scanned || scanned.hasNonFinite || !scanned.nested) return false
  const {members: bundle, nested: task} = scanned
  if (!bundle.hasPlainDistinctKeys() || !task.hasPlainDistinctKeys()) return false
  BUNDLE_SLOTS.locate(bundle, bundleSlots)
  const version = bundleSlots[0]
  const scenario = bundleSlots[1]
  const taskAt = bundleSlots[2]
  const provenance = bundleSlots[3]
  const known = (version === -1 ? 0 : 1) + (scenario === -1 ? 0 : 1) + 1 + (provenance === -1 ? 0 : 1)
  if (known * 4 !== bundle.spanLength || scenario === -1) return false
  if (version !== -1 && !isStringOne(bytes, bundle.valueStart(version), bundle.valueEnd(version))) return false
  // an ID without escapes is its own UTF-8 bytes (valid, as read): no lone surrogate can be in them
  const idStart = bundle.valueStart(scenario) + 1
  const idEnd = bundle.valueEnd(scenario) - 1
  if (bytes[idStart - 1] !== QUOTE || idEnd <= idStart || holdsEscape(bytes, idStart, idEnd)) return false
  if (provenance !== -1 && !bundle.isObjectAt(provenance)) return false
  TASK_SLOTS.locate(task, taskSlots)
  const params = taskSlots[0]
  const agentRef = taskSlots[1]
  const id = taskSlots[2]
  if (!passesGymTask(task, params, agentRef)) return false

  const index = taskIndexOf(bytes.subarray(idStart, idEnd)).toString()
  let dumped = params === 0 && (agentRef === -1 || agentRef === 4)
  for (let m = 0; dumped && m < task.spanLength; m += 4) if (task.isNullAt(m)) dumped = false
  out.bytes(OPEN)
  if (dumped) {
    out.bytes(bytes, bundle.valueStart(taskAt) + 1, bundle.valueEnd(taskAt) - 1)
  } else {
    const {copier} = scanner
    copier.begin()
    copier.add(task, params, out)
    if (agentRef !== -1 && !task.isNullAt(agentRef)) copier.add(task, agentRef, out)
    for (let m = 0; m < task.spanLength; m += 4) if (m !== params && m !== agentRef && !task.isNullAt(m)) copier.add(task, m, out)
    copier.end(task, out)
  }
  if (id === -1 || task.isNullAt(id)) {
    out.bytes(ID_KEY)
    out.text(index)
  }
  out.bytes(TASK_INDEX_KEY)
  out.text(index)
  out.bytes(SCENARIO_ID_KEY)
  out.bytes(bytes, idStart - 1, idEnd + 1)
  if (provenance !== -1 && !isEmptyObjectAt(bundle, provenance)) {
    out.bytes(PROVENANCE_KEY)
    out.bytes(bytes, bundle.valueStart(provenance), bundle.valueEnd(provenance))
  }
  out.bytes(CLOSE)
  out.endLine()
  return true
}

export interface ExportSummary {
  input: string
  /** The file written; null on a dry run without --output. */
  output: string | null
  dryRun: boolean
  tasks: number
}

/** Stream scenarios.jsonl into Gym tasks, same order; nothing is written unless every bundle is valid. */
export async function exportTasks(options: {input: string; output: string; dryRun: boolean; onProgress?: (progress: ReadProgress) => void}): Promise<ExportSummary> {
  const {input, output, dryRun} = options
  const tasks = await withJsonlOutput(output, dryRun, async (out) => {
    const built = new LineBuilder()
    const scanner = new BundleScanner()
    for await (const batch of readJsonlBatches(input, 'SCENARIOS', options.onProgress, {bytes: true, text: false})) {
      for (let line = batch.next(); line; line = batch.next()) {
        if (exportBundleBytes(line.bytes, built, scanner)) continue
        const bundle = scanObjectLine(line, input, 'task')
        try {
          built.text(exportBundle(bundle))
        } catch (error) {
          throw locate(error, 'E_BUNDLE_INVALID', input, line.line, 'Scenario bundles come from `gymrecipe tasks build`.')
        }
        built.endLine()
      }
      // the batch's bytes are copied before the next batch is read over them
      await out.writeBuilt(built)
    }
    return out.lines
  })
  return {input, output: output || null, dryRun, tasks}
}

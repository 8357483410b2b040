import type {DatasetSource, GymDataset, GymProblem} from './types.js'
import type {Origin} from './provenance.js'
import {hasKey, isMapping, isMissing, type Mapping, type Path, toPointer} from './tree.js'

/** `license` values NeMo Gym's DatasetConfig accepts. */
export const KNOWN_LICENSES = [
  'Apache 2.0',
  'MIT',
  'Creative Commons Attribution 4.0 International',
  'Creative Commons Attribution-ShareAlike 4.0 International',
  'CC BY-SA 4.0',
  'CC BY-NC 3.0',
  'NVIDIA Internal Use Only, Do Not Distribute',
  'NVIDIA Evaluation Dataset License Agreement',
  'TBD',
  'GNU General Public License v3.0',
]

const KNOWN_TYPES = ['train', 'validation', 'example', 'benchmark']

type Report = (severity: GymProblem['severity'], message: string, path: Path) => void

/** Read an agent's `datasets:` list; anything malformed becomes a problem, never an exception. */
export function readDatasets(value: unknown, path: Path, locate: (path: Path) => Origin): {datasets: GymDataset[]; problems: GymProblem[]} {
  const problems: GymProblem[] = []
  const report: Report = (severity, message, at) => problems.push({severity, message, pointer: toPointer(at), ...locate(at)})
  if (value === undefined || value === null || isMissing(value)) return {datasets: [], problems}
  if (!Array.isArray(value)) {
    report('error', 'datasets must be a list of dataset entries', path)
    return {datasets: [], problems}
  }
  const datasets: GymDataset[] = []
  value.forEach((entry, index) => {
    const at = [...path, index]
    if (isMapping(entry)) datasets.push(readDataset(entry, at, report))
    else report('error', `dataset entry ${index} must be a mapping with name, type and jsonl_fpath`, at)
  })
  return {datasets, problems}
}

function readDataset(entry: Mapping, path: Path, report: Report): GymDataset {
  const text = (key: string, required: boolean): string | null => optionalString(entry, key, path, report, required)
  const dataset: GymDataset = {
    name: text('name', true) ?? '',
    type: text('type', true) ?? '',
    jsonlFpath: text('jsonl_fpath', true),
    license: text('license', false),
    numRepeats: readNumRepeats(entry, path, report),
    sources: readSources(entry, path, report),
    promptConfig: text('prompt_config', false),
    prepareScript: text('prepare_script', false),
  }
  checkTypeRules(dataset, path, report)
  return dataset
}

function checkTypeRules(dataset: GymDataset, path: Path, report: Report): void {
  if (dataset.type !== '' && !KNOWN_TYPES.includes(dataset.type)) {
    report('warning', `dataset '${dataset.name}' has type '${dataset.type}'; Gym knows ${KNOWN_TYPES.join(', ')}`, [...path, 'type'])
  }
  if ((dataset.type === 'train' || dataset.type === 'validation') && dataset.license === null) {
    report('error', `dataset '${dataset.name}' (${dataset.type}) has no license; Gym requires one for train and validation data`, path)
  }
  if (dataset.license !== null && !KNOWN_LICENSES.includes(dataset.license)) {
    report('warning', `dataset '${dataset.name}' has license '${dataset.license}', which is not one Gym lists`, [...path, 'license'])
  }
  if (dataset.type === 'benchmark' && dataset.prepareScript === null) {
    report('error', `benchmark dataset '${dataset.name}' has no prepare_script; Gym requires one for benchmarks`, path)
  }
}

function optionalString(entry: Mapping, key: string, path: Path, report: Report, required: boolean): string | null {
  const value = hasKey(entry, key) ? entry[key] : undefined
  if (value === undefined || value === null || isMissing(value)) {
    if (required && !isMissing(value)) report('error', `dataset entry has no ${key}`, path)
    return null
  }
  if (typeof value === 'string') return value
  report('error', `dataset ${key} must be a string, got ${JSON.stringify(value)}`, [...path, key])
  return String(value)
}

function readNumRepeats(entry: Mapping, path: Path, report: Report): number | null {
  const value = entry.num_repeats
  if (value === undefined || value === null || isMissing(value)) return null
  if (typeof value === 'number' && Number.isInteger(value) && value >= 1) return value
  report('error', `num_repeats must be an integer >= 1, got ${JSON.stringify(value)}`, [...path, 'num_repeats'])
  return null
}

/**
 * All source forms present, primary first: `source:` (the preferred form, exclusive with the
 * legacy ones), else `gitlab_identifier` (primary when both legacy ids exist) then `huggingface_identifier`.
 */
function readSources(entry: Mapping, path: Path, report: Report): DatasetSource[] {
  const sources: DatasetSource[] = []
  const present = (key: string) => hasKey(entry, key) && entry[key] !== null && entry[key] !== undefined
  if (present('source')) {
    const source = readUnifiedSource(entry.source, [...path, 'source'], report)
    if (source) sources.push(source)
    if (present('gitlab_identifier') || present('huggingface_identifier')) {
      report('error', 'source: cannot be combined with gitlab_identifier or huggingface_identifier', [...path, 'source'])
    }
  }
  if (present('gitlab_identifier')) {
    const source = readGitlab(entry.gitlab_identifier, [...path, 'gitlab_identifier'], 'gitlab_identifier', report)
    if (source) sources.push(source)
  }
  if (present('huggingface_identifier')) {
    const source = readHuggingFace(entry.huggingface_identifier, [...path, 'huggingface_identifier'], 'huggingface_identifier', report)
    if (source) sources.push(source)
  }
  return sources
}

function readUnifiedSource(value: unknown, path: Path, report: Report): DatasetSource | null {
  if (!isMapping(value)) {
    report('error', 'source must be a mapping with a type (huggingface or gitlab)', path)
    return null
  }
  if (value.type === 'huggingface') return readHuggingFace(value, path, 'source', report)
  if (value.type === 'gitlab') return readGitlab(value, path, 'source', report)
  report('error', `source type must be huggingface or gitlab, got ${JSON.stringify(value.type)}`, [...path, 'type'])
  return null
}

function readHuggingFace(value: unknown, path: Path, form: 'source' | 'huggingface_identifier', report: Report): DatasetSource | null {
  if (!isMapping(value)) {
    report('error', `${form} must be a mapping with repo_id`, path)
    return null
  }
  const repoId = requiredField(value, 'repo_id', path, report)
  if (repoId === null) return null
  return {type: 'huggingface', repoId, artifactFpath: artifactOf(value, path, report), form}
}

function readGitlab(value: unknown, path: Path, form: 'source' | 'gitlab_identifier', report: Report): DatasetSource | null {
  if (!isMapping(value)) {
    report('error', `${form} must be a mapping with dataset_name, version and artifact_fpath`, path)
    return null
  }
  const datasetName = requiredField(value, 'dataset_name', path, report)
  const version = requiredField(value, 'version', path, report)
  if (datasetName === null || version === null) return null
  const artifactFpath = artifactOf(value, path, report)
  if (artifactFpath === null && !isMissing(value.artifact_fpath)) report('error', 'artifact_fpath is required for a GitLab dataset source', path)
  return {type: 'gitlab', datasetName, version, artifactFpath, form}
}

function artifactOf(value: Mapping, path: Path, report: Report): string | null {
  const artifact = value.artifact_fpath
  if (artifact === undefined || artifact === null || isMissing(artifact)) return null
  if (typeof artifact === 'string') return artifact
  report('error', `artifact_fpath must be a string, got ${JSON.stringify(artifact)}`, [...path, 'artifact_fpath'])
  return String(artifact)
}

/** A required string; a number (e.g. an unquoted `version: 1.0`) is reported, since YAML already lost its spelling. */
function requiredField(value: Mapping, key: string, path: Path, report: Report): string | null {
  const field = value[key]
  if (typeof field === 'string' && !isMissing(field)) return field
  if (typeof field === 'number') {
    report('error', `${key} must be a string; quote it in the YAML (read as the number ${field})`, [...path, key])
    return String(field)
  }
  if (!isMissing(field)) report('error', `${key} is required`, [...path, key])
  return null
}

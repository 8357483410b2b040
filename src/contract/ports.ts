import {ExitCode, GymError} from '../errors.js'
import type {RecipeContract} from './types.js'
import {servicePorts} from './types.js'

/** Linux's default ephemeral range (net.ipv4.ip_local_port_range); services placed here collide with outgoing connections. */
export const EPHEMERAL_RANGE = {low: 32768, high: 60999} as const

export const RAY_COMPONENT_PORTS = [
  'object-manager-port',
  'node-manager-port',
  'ray-client-server-port',
  'dashboard-agent-listen-port',
  'dashboard-agent-grpc-port',
  'runtime-env-agent-port',
  'metrics-export-port',
] as const

export interface PortRange {
  /** What uses the range, e.g. "service block" or "Ray GCS". */
  label: string
  /** JSON pointer of the contract field that sets it. */
  pointer: string
  low: number
  high: number
}

export function inEphemeralRange(port: number): boolean {
  return port >= EPHEMERAL_RANGE.low && port <= EPHEMERAL_RANGE.high
}

export function rangesOverlap(a: {low: number; high: number}, b: {low: number; high: number}): boolean {
  return a.low <= b.high && b.low <= a.high
}

/** Every port range a recipe occupies on the Gym host. */
export function recipePortRanges(contract: Pick<RecipeContract, 'service' | 'ray'> & {gym?: Pick<RecipeContract['gym'], 'model_servers' | 'additional_environments'>}): PortRange[] {
  const ports = servicePorts(contract)
  const added = contract.gym?.model_servers?.length ?? 0
  const agents = contract.gym?.additional_environments?.length ? 'agents, resources servers' : 'agent, resource'
  return [
    {label: `service block (gateway, ${agents}, head${added > 0 ? ', added model servers' : ''})`, pointer: '/service/gateway_port', low: ports.gateway, high: ports.head + added},
    {label: 'private Ray GCS', pointer: '/ray/gcs_port', low: contract.ray.gcs_port, high: contract.ray.gcs_port},
    {label: 'private Ray dashboard', pointer: '/ray/dashboard_port', low: contract.ray.dashboard_port, high: contract.ray.dashboard_port},
    {
      label: 'private Ray component ports',
      pointer: '/ray/component_port_base',
      low: contract.ray.component_port_base,
      high: contract.ray.component_port_base + RAY_COMPONENT_PORTS.length - 1,
    },
    {label: 'private Ray worker ports', pointer: '/ray/min_worker_port', low: contract.ray.min_worker_port, high: contract.ray.max_worker_port},
  ]
}

export interface PortViolation {
  pointer: string
  message: string
}

/** Ports outside the ephemeral range, in bounds, and no two ranges of one recipe overlapping. */
export function checkOwnPorts(contract: Parameters<typeof recipePortRanges>[0]): PortViolation[] {
  const violations: PortViolation[] = []
  if (contract.ray.min_worker_port > contract.ray.max_worker_port) {
    violations.push({pointer: '/ray/min_worker_port', message: `min_worker_port ${contract.ray.min_worker_port} is above max_worker_port ${contract.ray.max_worker_port}`})
    return violations
  }
  const ranges = recipePortRanges(contract)
  for (const range of ranges) {
    if (range.low < 1024 || range.high > 65535) {
      violations.push({pointer: range.pointer, message: `${range.label} ${describe(range)} must lie within 1024-65535`})
    }
    if (rangesOverlap(range, EPHEMERAL_RANGE)) {
      violations.push({pointer: range.pointer, message: `${range.label} ${describe(range)} overlaps the ephemeral range ${EPHEMERAL_RANGE.low}-${EPHEMERAL_RANGE.high}`})
    }
  }
  for (let i = 0; i < ranges.length; i++) {
    for (let j = i + 1; j < ranges.length; j++) {
      if (rangesOverlap(ranges[i], ranges[j])) {
        violations.push({pointer: ranges[j].pointer, message: `${ranges[j].label} ${describe(ranges[j])} overlaps the ${ranges[i].label} ${describe(ranges[i])}`})
      }
    }
  }
  return violations
}

export function describe(range: {low: number; high: number}): string {
  return range.low === range.high ? String(range.low) : `${range.low}-${range.high}`
}

/** A recipe already in the checkout and the ports it holds. */
export interface OccupiedRecipe {
  id: string
  ranges: PortRange[]
}

export function collisions(contract: Parameters<typeof recipePortRanges>[0], others: OccupiedRecipe[]): PortViolation[] {
  const violations: PortViolation[] = []
  for (const mine of recipePortRanges(contract)) {
    for (const other of others) {
      for (const theirs of other.ranges) {
        if (rangesOverlap(mine, theirs)) {
          violations.push({
            pointer: mine.pointer,
            message: `${mine.label} ${describe(mine)} collides with recipe "${other.id}" (${theirs.label} ${describe(theirs)})`,
          })
        }
      }
    }
  }
  return violations
}

/** The first GCS port from 6381 up that no other recipe uses: next to the Relax cluster's 6379, never equal to it. */
export function freeGcsPort(others: OccupiedRecipe[]): number {
  const taken = others.flatMap((o) => o.ranges)
  let gcs = 6381
  while (taken.some((r) => rangesOverlap(r, {low: gcs, high: gcs}))) gcs++
  return gcs
}

/**
 * Pick a free port layout. Each recipe gets a block of 100 ports: service ports
 * at base..base+3, Ray components at base+10..base+16, the Ray dashboard at
 * base+17 and Ray workers at base+20..base+99, below the ephemeral range.
 */
export function allocatePorts(others: OccupiedRecipe[]): Pick<RecipeContract['service'], 'gateway_port'> & Omit<RecipeContract['ray'], 'num_cpus'> {
  const taken = others.flatMap((o) => o.ranges)
  const free = (low: number, high: number) => !taken.some((r) => rangesOverlap(r, {low, high}))
  const bases = [...blockBases(29000, EPHEMERAL_RANGE.low), ...blockBases(20000, 29000)]
  const base = bases.find((b) => free(b, b + 99))
  if (base === undefined) {
    throw new GymError(`no free 100-port block between 20000 and ${EPHEMERAL_RANGE.low - 1}: the ${others.length} recipes of this Relax checkout hold them all`, {
      code: 'E_NO_FREE_PORTS',
      exit: ExitCode.precondition,
      hint: 'Remove recipes you no longer use from the checkout (each holds its block while its recipe.yaml exists), or make this recipe in another Relax checkout.',
      details: {recipes: others.length, blocks: bases.length},
    })
  }
  return {gateway_port: base, gcs_port: freeGcsPort(others), component_port_base: base + 10, dashboard_port: base + 17, min_worker_port: base + 20, max_worker_port: base + 99}
}

/** Block bases from `low` in steps of 100 whose whole block ends below `end`. */
function blockBases(low: number, end: number): number[] {
  const bases: number[] = []
  for (let base = low; base + 99 < end; base += 100) bases.push(base)
  return bases
}

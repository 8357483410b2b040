/**
 * The Gateway's callback allowlist and the proxy bypass list, evaluated the way the Gateway and
 * Python's urllib do (`validate_callback_url`): exact lowercase host names, or an IP
 * literal inside a strict CIDR (no /0, no host bits, no DNS resolution).
 */
import net from 'node:net'

function ipv4ToBigInt(ip: string): bigint {
  return ip.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n)
}

function ipv6ToBigInt(ip: string): bigint {
  let text = ip.toLowerCase()
  // An embedded IPv4 tail (::ffff:10.0.0.1) becomes two hextets.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (v4) {
    const n = ipv4ToBigInt(v4[1])
    text = text.slice(0, -v4[1].length) + `${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined]
  const headParts = head ? head.split(':') : []
  const tailParts = tail === undefined ? [] : tail ? tail.split(':') : []
  const missing = 8 - headParts.length - tailParts.length
  const parts = tail === undefined ? headParts : [...headParts, ...Array(missing).fill('0'), ...tailParts]
  return parts.reduce((acc, part) => (acc << 16n) | BigInt(parseInt(part || '0', 16)), 0n)
}

export interface ParsedNetwork {
  text: string
  family: 4 | 6
  base: bigint
  prefix: number
}

/** Parse a strict CIDR (Python `ip_network(strict=True)`); a reason when invalid. */
export function parseStrictCidr(text: string): ParsedNetwork | {problem: string} {
  const trimmed = text.trim()
  const [address, prefixText] = trimmed.includes('/') ? trimmed.split('/', 2) : [trimmed, undefined]
  const family = net.isIP(address)
  if (family === 0) return {problem: `"${trimmed}" is not an IP network`}
  const bits = family === 4 ? 32 : 128
  const prefix = prefixText === undefined ? bits : Number(prefixText)
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > bits || (prefixText !== undefined && !/^\d+$/.test(prefixText))) {
    return {problem: `"${trimmed}" has an invalid prefix length`}
  }
  if (prefix === 0) return {problem: `"${trimmed}" allows every address (/0 is rejected)`}
  const base = family === 4 ? ipv4ToBigInt(address) : ipv6ToBigInt(address)
  const hostMask = (1n << BigInt(bits - prefix)) - 1n
  if ((base & hostMask) !== 0n) return {problem: `"${trimmed}" has host bits set (strict CIDR required)`}
  return {text: trimmed, family: family as 4 | 6, base, prefix}
}

function inNetwork(ip: string, network: ParsedNetwork): boolean {
  const family = net.isIP(ip)
  if (family !== network.family) return false
  const bits = family === 4 ? 32 : 128
  const value = family === 4 ? ipv4ToBigInt(ip) : ipv6ToBigInt(ip)
  const shift = BigInt(bits - network.prefix)
  return value >> shift === network.base >> shift
}

function splitList(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean)
}

export interface AllowlistVerdict {
  covered: boolean
  configured: boolean
  /** How it is covered, or why not. */
  reason: string
  problems: string[]
}

/** Does the callback allowlist (container or env.sh values) admit this callback host? */
export function allowlistCovers(env: Record<string, string | undefined>, callbackHost: string): AllowlistVerdict {
  const host = callbackHost.toLowerCase().replace(/^\[|\]$/g, '')
  const hosts = splitList(env.NEMO_GYM_CALLBACK_ALLOWED_HOSTS).map((h) => h.toLowerCase())
  const networkTexts = splitList(env.NEMO_GYM_CALLBACK_ALLOWED_NETWORKS)
  const problems: string[] = []
  if (hosts.includes('*')) problems.push('NEMO_GYM_CALLBACK_ALLOWED_HOSTS contains "*", which the Gateway rejects')
  const networks: ParsedNetwork[] = []
  for (const text of networkTexts) {
    const parsed = parseStrictCidr(text)
    if ('problem' in parsed) problems.push(`NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: ${parsed.problem}`)
    else networks.push(parsed)
  }
  const configured = hosts.length > 0 || networkTexts.length > 0
  if (!configured) {
    return {covered: false, configured, reason: 'neither NEMO_GYM_CALLBACK_ALLOWED_HOSTS nor NEMO_GYM_CALLBACK_ALLOWED_NETWORKS is set', problems}
  }
  if (hosts.includes(host)) return {covered: problems.length === 0, configured, reason: `${host} is listed in NEMO_GYM_CALLBACK_ALLOWED_HOSTS`, problems}
  if (net.isIP(host)) {
    const match = networks.find((n) => inNetwork(host, n))
    if (match) return {covered: problems.length === 0, configured, reason: `${host} is inside ${match.text}`, problems}
    return {
      covered: false,
      configured,
      reason: `${host} is neither in NEMO_GYM_CALLBACK_ALLOWED_HOSTS [${hosts.join(', ')}] nor inside NEMO_GYM_CALLBACK_ALLOWED_NETWORKS [${networkTexts.join(', ')}]`,
      problems,
    }
  }
  return {
    covered: false,
    configured,
    reason: `${host} is a name: it must be listed exactly in NEMO_GYM_CALLBACK_ALLOWED_HOSTS (networks are matched without DNS resolution); hosts are [${hosts.join(', ')}]`,
    problems,
  }
}

/** Does a NO_PROXY value bypass the proxy for this host (urllib's rules: exact, `*`, or a domain suffix)? */
export function noProxyCovers(value: string, host: string): boolean {
  const target = host.toLowerCase().replace(/^\[|\]$/g, '')
  for (const raw of splitList(value)) {
    const entry = raw.toLowerCase().replace(/:\d+$/, '')
    if (entry === '*') return true
    if (entry === target) return true
    if (!net.isIP(target)) {
      const suffix = entry.startsWith('.') ? entry : `.${entry}`
      if (target.endsWith(suffix)) return true
    }
  }
  return false
}

/**
 * The Python programs the network rung runs elsewhere: on every Ray node (through a Ray job) and
 * inside the Gym container (through the Docker exec API). Standard library only (+ `ray` on the
 * nodes). Each prints one JSON line per result after a fixed marker.
 */

export const NODE_PROBE_MARKER = 'GYMRECIPE_NETWORK_PROBE'
export const NODE_PROBE_DONE = 'GYMRECIPE_NETWORK_PROBE_DONE'
export const RELAX_PROBE_MARKER = 'GYMRECIPE_RELAX_PROBE'

/**
 * Ray job driver: one zero-CPU task per alive node, pinned with a hard NodeAffinitySchedulingStrategy,
 * each doing `GET <gateway>/readyz` without proxies (the thin client ignores proxy variables).
 * argv: <gateway_url> <timeout_s>
 */
export const NODE_PROBE_PY = String.raw`
import json, sys, time
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

gateway = sys.argv[1].rstrip("/")
timeout = float(sys.argv[2])


@ray.remote(num_cpus=0)
def probe(url, timeout):
    import json, socket, time, urllib.error, urllib.request
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    started = time.time()
    result = {"hostname": socket.gethostname()}
    try:
        with opener.open(urllib.request.Request(url, method="GET"), timeout=timeout) as response:
            status, body = response.status, response.read(65536)
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read(65536)
    except Exception as error:
        result.update(reachable=False, error=f"{type(error).__name__}: {error}", elapsed_s=round(time.time() - started, 3))
        return result
    result.update(reachable=True, http_status=status, elapsed_s=round(time.time() - started, 3))
    try:
        doc = json.loads(body)
    except Exception:
        doc = None
    if isinstance(doc, dict):
        for key in ("protocol_version", "ready", "active_trials", "service_epoch"):
            result[key] = doc.get(key)
    else:
        result["body"] = body[:200].decode("utf-8", "replace")
    return result


ray.init(address="auto")
nodes = [n for n in ray.nodes() if n.get("Alive")]
pending = []
for node in nodes:
    strategy = NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)
    pending.append((node, probe.options(scheduling_strategy=strategy).remote(gateway + "/readyz", timeout)))
for node, ref in pending:
    try:
        result = ray.get(ref, timeout=timeout + 60)
    except Exception as error:
        result = {"reachable": False, "error": f"probe task did not run: {type(error).__name__}: {error}"}
    result["node_id"] = node["NodeID"]
    result["node_ip"] = node.get("NodeManagerAddress")
    print("${NODE_PROBE_MARKER} " + json.dumps(result, sort_keys=True), flush=True)
print("${NODE_PROBE_DONE} " + json.dumps({"nodes": len(nodes)}), flush=True)
`

/**
 * Inside the Gym container: POST {} (no credentials) to the callback upstream exactly as the Gateway
 * would reach it: directly, or through NEMO_GYM_CALLBACK_PROXY when that is set.
 * argv: <url> <timeout_s>
 */
export const RELAX_PROBE_PY = String.raw`
import json, os, sys, time, urllib.error, urllib.request
url, timeout = sys.argv[1], float(sys.argv[2])
proxy = os.environ.get("NEMO_GYM_CALLBACK_PROXY")
opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy, "https": proxy} if proxy else {}))
request = urllib.request.Request(url, data=b"{}", method="POST", headers={"Content-Type": "application/json"})
started = time.time()
result = {"url": url, "via_proxy": bool(proxy)}
try:
    with opener.open(request, timeout=timeout) as response:
        result.update(reachable=True, http_status=response.status)
except urllib.error.HTTPError as error:
    result.update(reachable=True, http_status=error.code)
except Exception as error:
    result.update(reachable=False, error=f"{type(error).__name__}: {error}")
result["elapsed_s"] = round(time.time() - started, 3)
print("${RELAX_PROBE_MARKER} " + json.dumps(result, sort_keys=True), flush=True)
`

/** A shell-safe `python3 -c` form of a program (base64, so no quoting can break it). */
export function pythonInline(program: string, python = 'python3'): string {
  const encoded = Buffer.from(program, 'utf8').toString('base64')
  return `${python} -c "import base64; exec(compile(base64.b64decode('${encoded}'), 'gymrecipe_probe', 'exec'))"`
}

/** Parse `MARKER {json}` lines out of a log. */
/** Collects, from log text streaming past, only the lines that carry one of the markers (bounded). */
export class MarkedLines {
  private partial = ''
  private readonly kept: string[] = []

  constructor(
    private readonly markers: string[],
    private readonly limit = 10_000,
  ) {}

  push(text: string): void {
    const pieces = (this.partial + text).split('\n')
    this.partial = pieces.pop() ?? ''
    if (this.partial.length > 1_048_576) this.partial = ''
    for (const line of pieces) this.keep(line)
  }

  private keep(line: string): void {
    if (this.kept.length < this.limit && this.markers.some((m) => line.includes(`${m} `))) this.kept.push(line)
  }

  text(): string {
    return [...this.kept, this.partial].join('\n')
  }
}

export function markedLines(log: string, marker: string): Array<Record<string, unknown>> {
  const results: Array<Record<string, unknown>> = []
  for (const line of log.split('\n')) {
    const at = line.indexOf(`${marker} `)
    if (at < 0) continue
    try {
      const parsed = JSON.parse(line.slice(at + marker.length + 1))
      if (parsed && typeof parsed === 'object') results.push(parsed)
    } catch {
      // a truncated line is not a result
    }
  }
  return results
}

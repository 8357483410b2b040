/**
 * The bad-input corpus: every command given inputs a hostile or careless user would give, each
 * with the exit status and first line it must answer with. `{ws}` is the case's own copy of the
 * template workspace, `{gym}` the NeMo Gym snapshot, `{recipe}` the generated recipe there
 * (`{snake}` its id with underscores, as in its raw data file name).
 * A case may also succeed (exit 0): those pin what the input policy accepts on purpose.
 */

import type {Hostile} from './servers.js'

export interface Mount {
  /** Folder under {ws} to cover with a private tmpfs. */
  at: string
  size: string
  readOnly?: boolean
  /** Bytes of padding written into it first (to leave almost no space). */
  fill?: number
}

export interface BadInput {
  id: string
  args: string[]
  /** Files written into {ws} first: text, bytes, a symlink, text appended, or a named pipe. */
  files?: Record<string, string | Uint8Array | {link: string} | {append: string} | {fifo: true}>
  env?: Record<string, string>
  /** Secrets this case configures (added to the environment): none may reach any output, in any form. */
  secrets?: Record<string, string>
  /** What must not appear instead of the secrets' whole values (when only a part is secret). */
  needles?: string[]
  /** A hostile service started for the case: {server}, {port}, {elsewhere} in args, env and files. */
  server?: Hostile
  /** SIGTERM the command this long after it starts: it must end (and say so) on its own. */
  sigtermAfterMs?: number
  /** Lines of output that must appear (after the first line). */
  mentions?: RegExp[]
  exit: number
  /** The first line of stderr (oclif's " ›   Error: " dropped), or of stdout when stderr is empty. */
  first: RegExp
  /** Paths under {ws} the command may create or change; everything else must stay byte-identical. */
  writes?: string[]
  /** Character devices the command is pointed at, which must still be devices afterwards. */
  devices?: string[]
  mounts?: Mount[]
}

const R = '{ws}/relax'
const RECIPE_DIR = 'relax/examples/nemo_gym_agentic/recipes/{recipe}'
const NEW = (id: string, ...extra: string[]) => ['new', id, '--gym-root', '{gym}', '--gym-config', 'environments/calendar/config.yaml', '--from', 'calendar', '--relax-root', R, ...extra]
const BUILD = (rows = '{ws}/rows.jsonl', ...extra: string[]) => ['tasks', 'build', rows, '--spec', '{ws}/spec.yaml', '-o', '{ws}/out.jsonl', ...extra]
const EXPORT = (bundles = '{ws}/bundles.jsonl', ...extra: string[]) => ['tasks', 'export', bundles, '-o', '{ws}/out.jsonl', ...extra]
const INGEST = (extra: string[] = [], rollouts = '{ws}/rollouts.jsonl', tasks = '{ws}/tasks.jsonl') => ['rollouts', 'ingest', '--tasks', tasks, '--rollouts', rollouts, '-o', '{ws}/out.jsonl', ...extra]
const CALL = (rows = '{ws}/call-rows.jsonl', config = '{ws}/call.yaml', ...extra: string[]) => ['call', 'resource', rows, '--config', config, '-o', '{ws}/out.jsonl', '-e', '{ws}/evidence', ...extra]
// No Docker for the data rung here: whether a probe image happens to exist on the machine (or
// another test's probe container is running) must not change a verdict of the corpus.
const DATA = (file: string) => ({NEMO_GYM_SOURCE_DATA: `{ws}/${file}`, DOCKER_HOST: 'unix:///nonexistent/docker.sock'})
const VERIFY_DATA = ['verify', '{recipe}', '--level', 'data', '--relax-root', R]

const BOMB = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]', ...'bcdefg'.split('').map((k, i) => `${k}: &${k} [${Array(9).fill(`*${'abcdefg'[i]}`).join(',')}]`), 'x: *g'].join('\n')
const DEEP = `{"seed_id": 1, "user_query": ${'['.repeat(100_000)}${']'.repeat(100_000)}}`
const INVALID_UTF8 = Uint8Array.from([...Buffer.from('{"seed_id": 1, "user_query": "caf'), 0xc3, 0x28, ...Buffer.from('"}\n')])
const CAL_ROW = '{"responses_create_params":{"input":[{"role":"user","content":"plan my day"}]},"exp_cal_state":{"1":{"event_id":1}}}'
const calRow = (extra: string) => `${CAL_ROW.slice(0, -1)},${extra}}`


const ENV_SH = `${RECIPE_DIR}/env.sh`
/** A one-agent Gym config (the calendar's) whose agent key is `key` (YAML text, quoted as needed). */
const CALENDAR_AGENT_KEYED = (key: string) => `calendar:
  resources_servers:
    calendar:
      entrypoint: app.py
      domain: agent
${key}:
  responses_api_agents:
    simple_agent:
      entrypoint: app.py
      resources_server: {type: resources_servers, name: calendar}
      model_server: {type: responses_api_models, name: policy_model}
      datasets:
      - {name: train, type: train, jsonl_fpath: environments/calendar/data/train.jsonl, license: Apache 2.0}
`
const INTERPOLATION_BOMB = ['a0: xxxxxxxxxxxxxxxx', ...Array.from({length: 40}, (_, i) => `a${i + 1}: \${a${i}}\${a${i}}`)].join('\n') + '\n'
const REFERENCE_CHAIN = ['r0: end', ...Array.from({length: 400}, (_, i) => `r${i + 1}: \${r${i}}`)].join('\n') + '\n'
const MANY_AGENTS = Array.from({length: 3000}, (_, i) => `agent_${i}:\n  responses_api_agents:\n    simple_agent:\n      entrypoint: app.py\n`).join('')

/** What train --dry-run's pre-flight must say about each hostile dashboard. */
const RAY_SAYS: Record<string, RegExp> = {
  redirect: /a redirect to http:\/\/127\.0\.0\.1:\d+\/api\/version, which gymrecipe does not follow/,
  'redirect-offhost': /a redirect to http:\/\/192\.0\.2\.1:8265\/api\/version, which gymrecipe does not follow/,
  endless: /more than gymrecipe reads .*byte limit/,
  'declares-huge': /more than gymrecipe reads .*declares \d+ bytes/,
  'cut-short': /cut short|closed the connection|connection was reset/,
  'not-http': /not (?:valid )?HTTP|closed the connection/,
  'wrong-json': /answered \/api\/version without a ray_version: not a Ray dashboard/,
  'escape-sequences': /HTTP 500/,
  'html-error': /HTTP 500/,
  drips: /no complete answer within \d+ s/,
}
// The endless body must hit the 64 MiB cap before the call's own time limit, even on a loaded machine.
const CALL_TIMEOUT_S: Partial<Record<string, number>> = {endless: 60}
const CALL_EXIT: Record<string, number> = {redirect: 1, 'redirect-offhost': 1, endless: 1, 'declares-huge': 1, 'cut-short': 1, 'not-http': 1, 'wrong-json': 0, 'escape-sequences': 1, 'html-error': 1, drips: 1}
/** The outcome a call run reports for each hostile service (details are in the evidence). */
const CALL_SAYS: Record<string, RegExp> = {
  redirect: /2 failed \(http_rejected 2\)/,
  'redirect-offhost': /2 failed \(http_rejected 2\)/,
  endless: /2 failed \(transport_failed 2\)/,
  'declares-huge': /2 failed \(transport_failed 2\)/,
  'cut-short': /2 failed \(transport_failed 2\)/,
  'not-http': /2 failed \(transport_failed 2\)/,
  'wrong-json': /2 rows, 2 completed/,
  'escape-sequences': /2 failed \(server_failed 2\)/,
  'html-error': /2 failed \(server_failed 2\)/,
  drips: /2 failed \(execution_timeout 2\)/,
}
const STATUS_SAYS: Record<string, RegExp> = {
  'readyz-partial': /ready/,
  endless: /byte limit|did not answer|not answer/,
  'not-http': /not (?:valid )?HTTP|did not answer|closed/,
  'escape-sequences': /./,
  redirect: /redirect/,
  'cut-short': /cut short|closed|did not answer/,
}

const GYM_HOST = {GYM_HOST: '127.0.0.1'}
const NO_DOCKER = {DOCKER_HOST: 'unix:///nonexistent/docker.sock'}

export const CASES: BadInput[] = [
  // --- the command line itself
  {id: 'unknown-command', args: ['frobnicate'], exit: 2, first: /frobnicate is not a gymrecipe command/},
  {id: 'unknown-flag', args: ['status', '{recipe}', '--relax-root', R, '--bogus'], exit: 2, first: /Nonexistent flag: --bogus/},
  {id: 'missing-argument', args: ['status'], exit: 2, first: /Missing 1 required arg/},
  {id: 'flag-without-value', args: ['status', '{recipe}', '--relax-root'], exit: 2, first: /Flag --relax-root expects a value/},
  {id: 'exclusive-flags', args: ['verify', '{recipe}', '--relax-root', R, '--level', 'static', '--only', 'data'], exit: 2, first: /^The following errors occurred:$/},
  {id: 'bad-option', args: ['verify', '{recipe}', '--relax-root', R, '--level', 'everything'], exit: 2, first: /Expected --level=everything to be one of/},

  // --- new
  {id: 'new-ok', args: NEW('fresh'), exit: 0, first: /fresh/, mentions: [/^next: gymrecipe verify fresh --level static --relax-root \/\S+\/relax$/m], writes: ['relax/examples/nemo_gym_agentic/recipes/fresh']},
  {id: 'new-not-a-relax-checkout', args: ['new', 'fresh', '--gym-root', '{gym}', '--gym-config', 'environments/calendar/config.yaml', '--relax-root', '{ws}/bare'], files: {'bare/.keep': ''}, exit: 0, first: /fresh/, mentions: [/^note: \S+\/bare has no scripts\/models: it does not look like a Relax checkout/m], writes: ['bare/examples']},
  {id: 'new-model-config-missing', args: NEW('x', '--model', 'Qwen3-8B'), files: {'relax/scripts/models/qwen3-4B.sh': '# model\n'}, exit: 2, first: /model config qwen3-8b\.sh is not in \S+\/relax\/scripts\/models$/, mentions: [/Pass --model-config with one of: qwen3-4B\.sh/]},
  {id: 'new-relax-root-is-a-file', args: ['new', 'x', '--gym-root', '{gym}', '--gym-config', 'environments/calendar/config.yaml', '--relax-root', '{ws}/rows.jsonl'], exit: 2, first: /Relax checkout \S+rows\.jsonl is not a directory$/},
  {id: 'new-diff-without-dry-run', args: NEW('fresh', '--diff'), exit: 2, first: /^--diff only works with --dry-run$/},
  {id: 'new-dry-run', args: NEW('fresh', '--dry-run'), exit: 0, first: /fresh/},
  {id: 'new-bad-id', args: NEW('Bad_ID'), exit: 2, first: /recipe id/i},
  {id: 'new-id-too-long', args: NEW('a'.repeat(49)), exit: 2, first: /^invalid recipe id "a{49}"$/, mentions: [/at most 48 lowercase letters/]},
  {id: 'new-id-with-slash', args: NEW('../escape'), exit: 2, first: /recipe id/i},
  {id: 'new-gym-root-missing', args: ['new', 'x', '--gym-root', '{ws}/nope', '--gym-config', 'c.yaml', '--relax-root', R], exit: 2, first: /Gym root .*nope is not a directory/},
  {id: 'new-gym-config-missing', args: ['new', 'x', '--gym-root', '{gym}', '--gym-config', 'environments/nope/config.yaml', '--relax-root', R], exit: 2, first: /nope\/config\.yaml/},
  {id: 'new-gym-config-outside', args: ['new', 'x', '--gym-root', '{gym}', '--gym-config', '../../../../etc/passwd', '--relax-root', R], exit: 2, first: /points outside the Gym root/},
  {id: 'new-relax-root-missing', args: ['new', 'x', '--gym-root', '{gym}', '--gym-config', 'environments/calendar/config.yaml', '--relax-root', '{ws}/nope'], exit: 2, first: /Relax checkout .*nope does not exist/},
  {id: 'new-unknown-builtin', args: ['new', 'x', '--gym-root', '{gym}', '--gym-config', 'environments/calendar/config.yaml', '--from', 'nope', '--relax-root', R], exit: 2, first: /nope/},
  {id: 'new-port-out-of-range', args: NEW('x', '--port-base', '70000'), exit: 2, first: /^Parsing --port-base$/},
  {id: 'new-verifier-missing', args: NEW('x', '--verifier', '{ws}/nope.yaml'), exit: 2, first: /^Error: Parsing --verifier/},
  {id: 'new-verifier-alias-bomb', args: NEW('x', '--verifier', '{ws}/bomb.yaml'), files: {'bomb.yaml': BOMB}, exit: 2, first: /YAML aliases expand too far/},
  {id: 'new-verifier-not-yaml', args: NEW('x', '--verifier', '{ws}/v.yaml'), files: {'v.yaml': 'verifier: [unclosed\n'}, exit: 2, first: /v\.yaml/},
  {id: 'new-verifier-wrong-shape', args: NEW('x', '--verifier', '{ws}/v.yaml'), files: {'v.yaml': 'verifier: 42\n'}, exit: 2, first: /v\.yaml must hold a "verifier:" block/},
  {id: 'new-verifier-incomplete', args: NEW('x', '--verifier', '{ws}/v.yaml'), files: {'v.yaml': 'verifier: {kind: resource_verify}\n'}, exit: 2, first: /v\.yaml: the --verifier file does not describe a valid verifier:$/},
  {id: 'new-into-linked-folder', args: NEW('linked'), files: {'elsewhere/.keep': '', 'relax/examples/nemo_gym_agentic/recipes/linked': {link: '../../../../elsewhere'}}, exit: 2, first: /recipe folder .*linked is a symbolic link \(to \.\.\/\.\.\/\.\.\/\.\.\/elsewhere\)/},
  {id: 'new-over-hand-edits', args: NEW('{recipe}'), files: {[`${RECIPE_DIR}/env.sh`]: 'GYM_HOST=10.0.0.1\n'}, exit: 3, first: /^refusing to overwrite 1 file\(s\) in .*{recipe}:$/},
  {id: 'new-disk-full', args: ['new', 'x', '--gym-root', '{gym}', '--gym-config', 'environments/calendar/config.yaml', '--from', 'calendar', '--relax-root', '{ws}/full'], mounts: [{at: 'full', size: '16k', fill: 12_000}], exit: 1, first: /^cannot write .*full\/examples\/nemo_gym_agentic\/recipes\/x\/.*: no space left on device \(ENOSPC\)$/, writes: ['full/pad']},
  {id: 'new-read-only', args: ['new', 'x', '--gym-root', '{gym}', '--gym-config', 'environments/calendar/config.yaml', '--from', 'calendar', '--relax-root', '{ws}/ro'], mounts: [{at: 'ro', size: '1m', readOnly: true}], exit: 1, first: /^cannot create the folder .*ro\/examples: read-only file system \(EROFS\)$/},

  // --- new --update
  {id: 'new-update-ok', args: NEW('{recipe}', '--update', '--port-base', '21000'), exit: 0, first: /{recipe}/, mentions: [/^ {2}update {4}env\.sh/m], writes: [RECIPE_DIR]},
  {id: 'new-update-json', args: NEW('{recipe}', '--update', '--port-base', '21000', '--dry-run', '--json'), exit: 0, first: /^\{$/},
  {id: 'new-update-conflict', args: NEW('{recipe}', '--update', '--port-base', '21000'), files: {[`${RECIPE_DIR}/env.sh`]: 'export NEMO_GYM_GATEWAY_PORT=1\n'}, exit: 3, first: /{recipe}/, mentions: [/^ {2}conflict {2}env\.sh/m, /resolve the conflict markers/], writes: [RECIPE_DIR]},
  {id: 'new-update-nothing-recorded', args: NEW('fresh', '--update'), exit: 2, first: /fresh has no recipe\.yaml to update$/},
  {id: 'new-update-with-force', args: NEW('{recipe}', '--update', '--force'), exit: 2, first: /^The following errors? occurred:$/},
  {id: 'new-update-contract-not-yaml', args: NEW('{recipe}', '--update'), files: {[`${RECIPE_DIR}/recipe.yaml`]: 'id: [unclosed\n'}, exit: 2, first: /recipe\.yaml is not valid YAML/},
  {id: 'new-update-alias-bomb', args: NEW('{recipe}', '--update'), files: {[`${RECIPE_DIR}/recipe.yaml`]: BOMB}, exit: 2, first: /recipe\.yaml/},

  // --- handoff
  {id: 'handoff-ok', args: ['handoff', '{recipe}', '--relax-root', R], env: NO_DOCKER, exit: 0, first: /^{recipe} hand-off: run from /, mentions: [/^not passed on current inputs:$/m]},
  {id: 'handoff-json', args: ['handoff', '{recipe}', '--relax-root', R, '--json'], env: NO_DOCKER, exit: 0, first: /^\{$/},
  {id: 'handoff-write', args: ['handoff', '{recipe}', '--relax-root', R, '--write'], env: NO_DOCKER, exit: 0, first: /hand-off/, mentions: [/^written: the Hand-off section of /m], writes: [`${RECIPE_DIR}/README.md`]},
  {id: 'handoff-write-readme-is-a-folder', args: ['handoff', '{recipe}', '--relax-root', R, '--write'], env: NO_DOCKER, files: {'elsewhere/.keep': '', [`${RECIPE_DIR}/README.md`]: {link: '../../../../../elsewhere'}}, exit: 2, first: /\/README\.md: README\.md is a folder, not a file$/},
  {id: 'handoff-dry-run-alone', args: ['handoff', '{recipe}', '--relax-root', R, '--dry-run'], exit: 2, first: /^--dry-run only applies with --write$/},
  {id: 'handoff-unknown-recipe', args: ['handoff', 'nope', '--relax-root', R], exit: 2, first: /nope/},
  {id: 'handoff-env-sh-syntax', args: ['handoff', '{recipe}', '--relax-root', R], env: NO_DOCKER, files: {[`${RECIPE_DIR}/env.sh`]: 'GYM_HOST="unclosed\n'}, exit: 0, first: /hand-off/, mentions: [/^ {2}env: sourcing .*env\.sh failed/m]},
  {id: 'handoff-recipe-yaml-bomb', args: ['handoff', '{recipe}', '--relax-root', R], files: {[`${RECIPE_DIR}/recipe.yaml`]: BOMB}, exit: 2, first: /YAML aliases expand too far/},

  // --- pitfall add
  {id: 'pitfall-add-ok', args: ['pitfall', 'add', '{recipe}', '--relax-root', R, '--symptom', 'Gateway 502 on every trial', '--cause', 'a port clash', '--fix', 'move the port block'], exit: 0, first: /^recorded entry \d+ in \S+PITFAIL\.md:$/, writes: [`${RECIPE_DIR}/PITFAIL.md`]},
  {id: 'pitfall-add-json', args: ['pitfall', 'add', '{recipe}', '--relax-root', R, '--symptom', 'x', '--cause', 'y', '--fix', 'z', '--dry-run', '--json'], exit: 0, first: /^\{$/},
  {id: 'pitfall-add-secret', args: ['pitfall', 'add', '{recipe}', '--relax-root', R, '--symptom', 'download refused with hf_PlantedToken123456', '--cause', 'y', '--fix', 'z'], exit: 0, first: /^recorded entry/, writes: [`${RECIPE_DIR}/PITFAIL.md`]},
  {id: 'pitfall-add-duplicate', args: ['pitfall', 'add', '{recipe}', '--relax-root', R, '--symptom', 'training hits the wrong gym port', '--cause', 'y', '--fix', 'z'], exit: 3, first: /PITFAIL\.md:\d+: this symptom is already entry 1: Training hits the wrong Gym port\.$/},
  {id: 'pitfall-add-two-lines', args: ['pitfall', 'add', '{recipe}', '--relax-root', R, '--symptom', 'a\nb', '--cause', 'y', '--fix', 'z'], exit: 2, first: /the symptom must be one line/},
  {id: 'pitfall-add-comment-marker', args: ['pitfall', 'add', '{recipe}', '--relax-root', R, '--symptom', 'a', '--cause', 'y', '--fix', '<!-- gymrecipe:recorded-pitfalls:end -->'], exit: 2, first: /HTML comment marker/},
  {id: 'pitfall-add-missing-parts', args: ['pitfall', 'add', '{recipe}', '--relax-root', R, '--symptom', 'a'], exit: 2, first: /^missing --cause, --fix$/},
  {id: 'pitfall-add-no-failure', args: ['pitfall', 'add', '{recipe}', '--relax-root', R, '--from-last-failure', '--yes'], exit: 3, first: /^no failed check is recorded for {recipe}$/},
  {id: 'pitfall-add-no-editor', args: ['pitfall', 'add', '{recipe}', '--relax-root', R, '--symptom', 'a', '--cause', 'y', '--fix', 'z', '--edit'], exit: 3, first: /^neither VISUAL nor EDITOR is set$/},
  {id: 'pitfall-add-pitfail-is-a-folder', args: ['pitfall', 'add', '{recipe}', '--relax-root', R, '--symptom', 'a', '--cause', 'y', '--fix', 'z'], files: {'elsewhere/.keep': '', [`${RECIPE_DIR}/PITFAIL.md`]: {link: '../../../../../elsewhere'}}, exit: 2, first: /\/PITFAIL\.md: PITFAIL\.md is a folder, not a file$/},
  {id: 'pitfall-add-unknown-recipe', args: ['pitfall', 'add', 'nope', '--relax-root', R, '--symptom', 'a', '--cause', 'y', '--fix', 'z'], exit: 2, first: /nope/},

  // --- adopt
  {id: 'adopt-already-recorded', args: ['adopt', '{recipe}', '--relax-root', R, '--gym-root', '{gym}'], exit: 3, first: /recipe\.yaml already records this recipe's contract$/},
  {id: 'adopt-missing-values', args: ['adopt', '{recipe}', '--relax-root', R, '--gym-root', '{gym}', '--force', '--dry-run', '--json'], exit: 3, first: /^E_ADOPT_INCOMPLETE: \S+recipe\.adopt\.yaml: \d+ value\(s\) to fill in: \//},
  {id: 'adopt-fill-from', args: ['adopt', '{recipe}', '--relax-root', R, '--gym-root', '{gym}', '--force', '--fill-from', 'calendar'], exit: 0, first: /^{recipe}: read \d+ value\(s\) from /, mentions: [/^ {2}filled {3}\/gateway\/lease_s +the built-in calendar \(--fill-from\)$/m], writes: [`${RECIPE_DIR}/recipe.yaml`]},
  {id: 'adopt-fill-from-unknown', args: ['adopt', '{recipe}', '--relax-root', R, '--gym-root', '{gym}', '--force', '--fill-from', 'nope'], exit: 2, first: /nope/},
  {id: 'adopt-unknown-recipe', args: ['adopt', 'nope', '--relax-root', R], exit: 2, first: /nope/},
  {id: 'adopt-draft-not-yaml', args: ['adopt', '{recipe}', '--relax-root', R, '--force'], files: {[`${RECIPE_DIR}/recipe.adopt.yaml`]: 'a: [unclosed\n'}, exit: 2, first: /recipe\.adopt\.yaml is not valid YAML/},
  {id: 'adopt-gym-root-missing', args: ['adopt', '{recipe}', '--relax-root', R, '--gym-root', '{ws}/nope', '--force'], exit: 2, first: /the Gym root .*nope is not a directory/},

  // --- inspect
  {id: 'inspect-ok', args: ['inspect', '--gym-root', '{gym}', '--gym-config', 'environments/calendar/config.yaml'], exit: 0, first: /^Gym root\s+.*nemo-gym-snapshot$/, mentions: [/^next: gymrecipe new <recipe-id> --gym-root \/\S+\/nemo-gym-snapshot --gym-config environments\/calendar\/config\.yaml --relax-root <your Relax checkout>$/m]},
  {id: 'inspect-gym-root-missing', args: ['inspect', '--gym-root', '{ws}/nope', '--gym-config', 'c.yaml'], exit: 2, first: /Gym root .*nope is not a directory/},
  {id: 'inspect-config-missing', args: ['inspect', '--gym-root', '{ws}', '--gym-config', 'nope.yaml'], exit: 2, first: /nope\.yaml/},
  {id: 'inspect-config-is-folder', args: ['inspect', '--gym-root', '{ws}', '--gym-config', 'relax'], exit: 2, first: /relax/},
  {id: 'inspect-alias-bomb', args: ['inspect', '--gym-root', '{ws}', '--gym-config', 'bomb.yaml'], files: {'bomb.yaml': BOMB}, exit: 2, first: /YAML aliases expand too far/},
  {id: 'inspect-not-yaml', args: ['inspect', '--gym-root', '{ws}', '--gym-config', 'bad.yaml'], files: {'bad.yaml': 'a: [1, 2\nb: }\n'}, exit: 2, first: /bad\.yaml/},
  {id: 'inspect-not-a-mapping', args: ['inspect', '--gym-root', '{ws}', '--gym-config', 'list.yaml'], files: {'list.yaml': '- 1\n- 2\n'}, exit: 2, first: /list\.yaml/},
  {id: 'inspect-config-paths-loop', args: ['inspect', '--gym-root', '{ws}', '--gym-config', 'a.yaml'], files: {'a.yaml': 'config_paths: [b.yaml]\n', 'b.yaml': 'config_paths: [a.yaml]\n'}, exit: 2, first: /a\.yaml|b\.yaml/},

  // --- tasks build
  {id: 'build-ok', args: BUILD(), exit: 0, first: /^Wrote 1 scenario bundle to/, writes: ['out.jsonl']},
  {id: 'build-dry-run', args: BUILD('{ws}/rows.jsonl', '--dry-run'), exit: 0, first: /^Would write 1 scenario bundle to/},
  {id: 'build-duplicate-key-last-wins', args: BUILD('{ws}/dup.jsonl'), files: {'dup.jsonl': '{"seed_id": 1, "user_query": "a", "user_query": "b", "system_prompt": "s", "tools_json": "[]", "reference_plan": {"is_valid": true, "tool_calls": []}}\n'}, exit: 0, first: /^Wrote 1 scenario bundle to/, writes: ['out.jsonl']},
  {id: 'build-empty-rows', args: BUILD('{ws}/empty.jsonl'), files: {'empty.jsonl': ''}, exit: 0, first: /^Wrote 0 scenario bundles to/, writes: ['out.jsonl']},
  {id: 'build-rows-missing', args: BUILD('{ws}/nope.jsonl'), exit: 2, first: /JSONL file does not exist: .*nope\.jsonl/},
  {id: 'build-rows-is-folder', args: BUILD('{ws}/relax'), exit: 2, first: /relax is a directory, not a JSONL file/},
  {id: 'build-rows-is-device', args: BUILD('/dev/null'), exit: 2, first: /\/dev\/null is a character device, not a JSONL file/},
  {id: 'build-rows-through-link', args: BUILD('{ws}/rows-link.jsonl'), exit: 0, first: /^Wrote 1 scenario bundle to/, writes: ['out.jsonl']},
  {id: 'build-spec-missing', args: ['tasks', 'build', '{ws}/rows.jsonl', '--spec', '{ws}/nope.yaml', '-o', '{ws}/out.jsonl'], exit: 2, first: /nope\.yaml/},
  {id: 'build-spec-is-folder', args: ['tasks', 'build', '{ws}/rows.jsonl', '--spec', '{ws}/relax', '-o', '{ws}/out.jsonl'], exit: 2, first: /relax/},
  {id: 'build-spec-alias-bomb', args: ['tasks', 'build', '{ws}/rows.jsonl', '--spec', '{ws}/bomb.yaml', '-o', '{ws}/out.jsonl'], files: {'bomb.yaml': BOMB}, exit: 2, first: /YAML aliases expand too far/},
  {id: 'build-spec-unknown-field', args: ['tasks', 'build', '{ws}/rows.jsonl', '--spec', '{ws}/s.yaml', '-o', '{ws}/out.jsonl'], files: {'s.yaml': 'name: t\nmessages: [{role: user, content_column: q}]\nbogus: 1\n'}, exit: 2, first: /bogus/},
  {id: 'build-spec-not-yaml', args: ['tasks', 'build', '{ws}/rows.jsonl', '--spec', '{ws}/s.yaml', '-o', '{ws}/out.jsonl'], files: {'s.yaml': 'name: [\n'}, exit: 2, first: /s\.yaml/},
  {id: 'build-truncated-row', args: BUILD('{ws}/r.jsonl'), files: {'r.jsonl': '{"seed_id": 1, "user_query": "trunc\n'}, exit: 2, first: /r\.jsonl:1: invalid JSON/},
  {id: 'build-row-is-array', args: BUILD('{ws}/r.jsonl'), files: {'r.jsonl': '[1, 2]\n'}, exit: 2, first: /r\.jsonl:1: line must contain a JSON object/},
  {id: 'build-row-nan', args: BUILD('{ws}/r.jsonl'), files: {'r.jsonl': '{"seed_id": NaN}\n'}, exit: 2, first: /r\.jsonl:1: invalid JSON/},
  {id: 'build-bom', args: BUILD('{ws}/r.jsonl'), files: {'r.jsonl': '\uFEFF{"seed_id": 1}\n'}, exit: 2, first: /r\.jsonl:1: the file starts with a UTF-8 byte order mark/},
  {id: 'build-invalid-utf8', args: BUILD('{ws}/r.jsonl'), files: {'r.jsonl': INVALID_UTF8}, exit: 2, first: /r\.jsonl:1: line is not valid UTF-8/},
  {id: 'build-overflowing-float', args: BUILD('{ws}/r.jsonl'), files: {'r.jsonl': '{"seed_id": 1e400, "user_query": "q"}\n'}, exit: 2, first: /r\.jsonl:1: .*must be a finite number/},
  {id: 'build-deep-nesting', args: BUILD('{ws}/r.jsonl'), files: {'r.jsonl': `${DEEP}\n`}, exit: 2, first: /r\.jsonl:1: nested deeper than 512 levels/},
  {id: 'build-line-over-limit', args: BUILD('{ws}/r.jsonl'), env: {GYMRECIPE_MAX_LINE_BYTES: '1000'}, files: {'r.jsonl': `{"seed_id": 1}\n{"user_query": "${'q'.repeat(5000)}"}\n`}, exit: 2, first: /r\.jsonl:2: line is longer than the 1000 bytes limit/},
  {id: 'build-65-mib-line', args: BUILD('{ws}/r.jsonl'), files: {'r.jsonl': `{"user_query": "${'q'.repeat(65 << 20)}"}\n`}, exit: 2, first: /r\.jsonl:1: line is longer than the 64 MiB limit/},
  {id: 'build-output-is-folder', args: ['tasks', 'build', '{ws}/rows.jsonl', '--spec', '{ws}/spec.yaml', '-o', '{ws}/relax'], exit: 2, first: /output .*relax is a directory/},
  {id: 'build-output-is-link', args: ['tasks', 'build', '{ws}/rows.jsonl', '--spec', '{ws}/spec.yaml', '-o', '{ws}/rows-link.jsonl'], exit: 2, first: /rows-link\.jsonl is a symbolic link/},
  {id: 'build-output-dev-null', args: ['tasks', 'build', '{ws}/rows.jsonl', '--spec', '{ws}/spec.yaml', '-o', '/dev/null'], exit: 0, first: /^Wrote 1 scenario bundle to \/dev\/null/, devices: ['/dev/null']},
  {id: 'build-output-dev-full', args: ['tasks', 'build', '{ws}/rows.jsonl', '--spec', '{ws}/spec.yaml', '-o', '/dev/full'], exit: 1, first: /^cannot write \/dev\/full: no space left on device \(ENOSPC\)$/, devices: ['/dev/full']},
  {id: 'build-output-stdout', args: ['tasks', 'build', '{ws}/rows.jsonl', '--spec', '{ws}/spec.yaml', '-o', '-'], exit: 0, first: /^Wrote 1 scenario bundle to -/},
  {id: 'build-output-stdout-json', args: ['tasks', 'build', '{ws}/rows.jsonl', '--spec', '{ws}/spec.yaml', '-o', '-', '--json'], exit: 2, first: /^E_USAGE: --json and --output - would both write to stdout$/},
  {id: 'build-output-disk-full', args: ['tasks', 'build', '{ws}/rows.jsonl', '--spec', '{ws}/spec.yaml', '-o', '{ws}/full/out.jsonl'], mounts: [{at: 'full', size: '16k', fill: 15_500}], exit: 1, first: /^cannot write .*full\/out\.jsonl: no space left on device \(ENOSPC\)$/, writes: ['full/pad']},
  {id: 'build-output-read-only', args: ['tasks', 'build', '{ws}/rows.jsonl', '--spec', '{ws}/spec.yaml', '-o', '{ws}/ro/out.jsonl'], mounts: [{at: 'ro', size: '1m', readOnly: true}], exit: 1, first: /^cannot open .*ro\/out\.jsonl: read-only file system \(EROFS\)$/},

  // --- tasks export
  {id: 'export-ok', args: EXPORT(), exit: 0, first: /^Wrote 1 Gym task to/, writes: ['out.jsonl']},
  {id: 'export-missing', args: EXPORT('{ws}/nope.jsonl'), exit: 2, first: /JSONL file does not exist/},
  {id: 'export-invalid-line', args: EXPORT('{ws}/b.jsonl'), files: {'b.jsonl': '{"scenario_id": \n'}, exit: 2, first: /b\.jsonl:1: invalid JSON/},
  {id: 'export-not-a-bundle', args: EXPORT('{ws}/b.jsonl'), files: {'b.jsonl': '{"hello": "world"}\n'}, exit: 2, first: /b\.jsonl:1:/},
  {id: 'export-overflowing-float', args: EXPORT('{ws}/b.jsonl'), files: {'b.jsonl': '{"scenario_id":"s","task":{"responses_create_params":{"input":"hi","temperature":1e400}}}\n'}, exit: 2, first: /b\.jsonl:1: task\.responses_create_params\.temperature: must be a finite number/},
  {id: 'export-bom', args: EXPORT('{ws}/b.jsonl'), files: {'b.jsonl': '\uFEFF{"scenario_id":"s"}\n'}, exit: 2, first: /b\.jsonl:1: the file starts with a UTF-8 byte order mark/},
  {id: 'export-deep', args: EXPORT('{ws}/b.jsonl'), files: {'b.jsonl': `{"scenario_id":"s","task":${'['.repeat(3000)}${']'.repeat(3000)}}\n`}, exit: 2, first: /b\.jsonl:1: nested deeper than 512 levels/},
  {id: 'export-output-dev-full', args: ['tasks', 'export', '{ws}/bundles.jsonl', '-o', '/dev/full'], exit: 1, first: /^cannot write \/dev\/full: no space left on device \(ENOSPC\)$/, devices: ['/dev/full']},
  {id: 'export-output-is-link', args: ['tasks', 'export', '{ws}/bundles.jsonl', '-o', '{ws}/rows-link.jsonl'], exit: 2, first: /rows-link\.jsonl is a symbolic link/},

  // --- rollouts ingest
  {id: 'ingest-ok', args: INGEST(), exit: 0, first: /^Wrote 1 record to .* \(1 completed, 0 failed; 1 task\)$/, writes: ['out.jsonl']},
  {id: 'ingest-tasks-missing', args: INGEST([], '{ws}/rollouts.jsonl', '{ws}/nope.jsonl'), exit: 2, first: /JSONL file does not exist: .*nope\.jsonl/},
  {id: 'ingest-rollouts-missing', args: INGEST([], '{ws}/nope.jsonl'), exit: 2, first: /JSONL file does not exist: .*nope\.jsonl/},
  {id: 'ingest-failures-missing', args: INGEST(['--failures', '{ws}/nope.jsonl']), exit: 2, first: /JSONL file does not exist: .*nope\.jsonl/},
  {id: 'ingest-unknown-task', args: INGEST([], '{ws}/r.jsonl'), files: {'r.jsonl': '{"_ng_task_index": 424242}\n'}, exit: 2, first: /r\.jsonl:1:/},
  {id: 'ingest-index-is-string', args: INGEST([], '{ws}/r.jsonl'), files: {'r.jsonl': '{"_ng_task_index": "7"}\n'}, exit: 2, first: /r\.jsonl:1:/},
  {id: 'ingest-overflowing-float', args: INGEST([], '{ws}/r.jsonl'), files: {'r.jsonl': '{"_ng_task_index": 1, "reward": 1e400}\n'}, exit: 2, first: /r\.jsonl:1: reward: must be a finite number/},
  {id: 'ingest-invalid-utf8', args: INGEST([], '{ws}/r.jsonl'), files: {'r.jsonl': Uint8Array.from([...Buffer.from('{"_ng_task_index": 1, "x": "'), 0xff, ...Buffer.from('"}\n')])}, exit: 2, first: /r\.jsonl:1: line is not valid UTF-8/},
  {id: 'ingest-deep', args: INGEST([], '{ws}/r.jsonl'), files: {'r.jsonl': `{"_ng_task_index": 1, "x": ${'{"a":'.repeat(2000)}1${'}'.repeat(2000)}}\n`}, exit: 2, first: /r\.jsonl:1: nested deeper than 512 levels/},
  {id: 'ingest-tasks-bom', args: INGEST([], '{ws}/rollouts.jsonl', '{ws}/t.jsonl'), files: {'t.jsonl': '\uFEFF{"_ng_task_index": 1}\n'}, exit: 2, first: /t\.jsonl:1: the file starts with a UTF-8 byte order mark/},
  {id: 'ingest-output-dev-full', args: ['rollouts', 'ingest', '--tasks', '{ws}/tasks.jsonl', '--rollouts', '{ws}/rollouts.jsonl', '-o', '/dev/full'], exit: 1, first: /^cannot write \/dev\/full: no space left on device \(ENOSPC\)$/, devices: ['/dev/full']},
  {id: 'ingest-output-is-folder', args: ['rollouts', 'ingest', '--tasks', '{ws}/tasks.jsonl', '--rollouts', '{ws}/rollouts.jsonl', '-o', '{ws}/relax'], exit: 2, first: /output .*relax is a directory/},

  // --- call
  {id: 'call-dry-run', args: CALL('{ws}/call-rows.jsonl', '{ws}/call.yaml', '--dry-run'), exit: 0, first: /2/},
  {id: 'call-config-missing', args: CALL('{ws}/call-rows.jsonl', '{ws}/nope.yaml'), exit: 2, first: /nope\.yaml/},
  {id: 'call-config-alias-bomb', args: CALL('{ws}/call-rows.jsonl', '{ws}/bomb.yaml'), files: {'bomb.yaml': BOMB}, exit: 2, first: /YAML aliases expand too far/},
  {id: 'call-config-unknown-field', args: CALL('{ws}/call-rows.jsonl', '{ws}/c.yaml'), files: {'c.yaml': 'name: v\nendpoint: http://127.0.0.1:9\nroute: /verify\nrow_id_column: id\nbogus: 1\n'}, exit: 2, first: /c\.yaml:5: invalid call resource config:$/},
  {id: 'call-config-not-http', args: CALL('{ws}/call-rows.jsonl', '{ws}/c.yaml'), files: {'c.yaml': 'name: v\nendpoint: file:///etc/passwd\nroute: /verify\nrow_id_column: id\n'}, exit: 2, first: /c\.yaml:2: invalid call resource config:$/},
  {id: 'call-config-route-relative', args: CALL('{ws}/call-rows.jsonl', '{ws}/c.yaml'), files: {'c.yaml': 'name: v\nendpoint: http://127.0.0.1:9\nroute: verify\nrow_id_column: id\n'}, exit: 2, first: /c\.yaml:3: invalid call resource config:$/},
  {id: 'call-rows-missing', args: CALL('{ws}/nope.jsonl'), exit: 2, first: /nope\.jsonl/},
  {id: 'call-rows-invalid', args: CALL('{ws}/r.jsonl'), files: {'r.jsonl': '{"id":"a","q":"x"}\n{"id":\n'}, exit: 2, first: /r\.jsonl:2: not valid JSON/},
  {id: 'call-rows-bom', args: CALL('{ws}/r.jsonl'), files: {'r.jsonl': '\uFEFF{"id":"a","q":"x"}\n'}, exit: 2, first: /r\.jsonl:1: the file starts with a UTF-8 byte order mark/},
  {id: 'call-rows-invalid-utf8', args: CALL('{ws}/r.jsonl'), files: {'r.jsonl': Uint8Array.from([...Buffer.from('{"id":"a","q":"'), 0xc0, 0xaf, ...Buffer.from('"}\n')])}, exit: 2, first: /r\.jsonl:1: line is not valid UTF-8/},
  {id: 'call-rows-overflowing-float', args: CALL('{ws}/r.jsonl'), files: {'r.jsonl': '{"id":"a","q":-1e999}\n'}, exit: 2, first: /r\.jsonl:1: q must be a finite number/},
  {id: 'call-rows-deep', args: CALL('{ws}/r.jsonl'), files: {'r.jsonl': `{"id":"a","q":${'['.repeat(5000)}${']'.repeat(5000)}}\n`}, exit: 2, first: /r\.jsonl:1: nested deeper than 512 levels/},
  {id: 'call-rows-line-over-limit', args: CALL('{ws}/r.jsonl'), env: {GYMRECIPE_MAX_LINE_BYTES: '2000'}, files: {'r.jsonl': `{"id":"a","q":"${'x'.repeat(3 << 20)}"}\n`}, exit: 2, first: /r\.jsonl:1: line is longer than the 2000 bytes limit/},
  {id: 'call-rows-have-output-column', args: CALL('{ws}/r.jsonl'), files: {'r.jsonl': '{"id":"a","q":"x","verdict":1}\n'}, exit: 2, first: /r\.jsonl:1: the row already has a field named verdict/},
  {id: 'call-rows-not-object', args: CALL('{ws}/r.jsonl'), files: {'r.jsonl': '"just a string"\n'}, exit: 2, first: /r\.jsonl:1: a row must be a JSON object/},
  {id: 'call-evidence-is-a-file', args: ['call', 'resource', '{ws}/call-rows.jsonl', '--config', '{ws}/call.yaml', '-o', '{ws}/out.jsonl', '-e', '{ws}/rows.jsonl'], exit: 2, first: /rows\.jsonl/},
  {id: 'call-evidence-in-use', args: CALL(), files: {'evidence/.gymrecipe.lock': '{"pid":1,"host":"elsewhere.example","since":"2026-12-01T00:00:00Z","processStart":null,"what":"gymrecipe resource call"}\n'}, exit: 3, first: /evidence is in use by pid 1 on elsewhere\.example \(gymrecipe resource call/},
  {id: 'call-output-is-link', args: ['call', 'resource', '{ws}/call-rows.jsonl', '--config', '{ws}/call.yaml', '-o', '{ws}/rows-link.jsonl', '-e', '{ws}/evidence'], exit: 2, first: /rows-link\.jsonl is a symbolic link/},

  // --- status
  {id: 'status-ok', args: ['status', '{recipe}', '--relax-root', R], env: NO_DOCKER, exit: 0, first: /{recipe}/},
  {id: 'status-unknown-recipe', args: ['status', 'nope', '--relax-root', R], exit: 2, first: /nope/},
  {id: 'status-relax-root-missing', args: ['status', '{recipe}', '--relax-root', '{ws}/nope'], exit: 2, first: /nope/},
  {id: 'status-env-sh-syntax', args: ['status', '{recipe}', '--relax-root', R], files: {[`${RECIPE_DIR}/env.sh`]: 'GYM_HOST="unclosed\n'}, exit: 2, first: /env\.sh/},
  {id: 'status-recipe-yaml-bomb', args: ['status', '{recipe}', '--relax-root', R], files: {[`${RECIPE_DIR}/recipe.yaml`]: BOMB}, exit: 2, first: /YAML aliases expand too far/},
  {id: 'status-recipe-yaml-invalid', args: ['status', '{recipe}', '--relax-root', R], files: {[`${RECIPE_DIR}/recipe.yaml`]: 'id: x\nschema_version: 99\n'}, exit: 2, first: /recipe\.yaml/},

  // --- prepare
  {id: 'prepare-dry-run', args: ['prepare', '{recipe}', '--relax-root', R, '--dry-run'], exit: 0, first: /^Dry run for {recipe} .*nothing was run\.$/},
  {id: 'prepare-env-sh-syntax', args: ['prepare', '{recipe}', '--relax-root', R, '--dry-run'], files: {[`${RECIPE_DIR}/env.sh`]: 'if then\n'}, exit: 2, first: /env\.sh/},
  {id: 'prepare-unknown-recipe', args: ['prepare', 'nope', '--relax-root', R, '--dry-run'], exit: 2, first: /nope/},
  {id: 'prepare-recipe-yaml-not-yaml', args: ['prepare', '{recipe}', '--relax-root', R, '--dry-run'], files: {[`${RECIPE_DIR}/recipe.yaml`]: 'id: [\n'}, exit: 2, first: /recipe\.yaml/},

  // --- start
  {id: 'start-gym-host-empty', args: ['start', '{recipe}', '--relax-root', R, '--dry-run'], exit: 2, first: /GYM_HOST is empty/},
  {id: 'start-env-sh-syntax', args: ['start', '{recipe}', '--relax-root', R, '--dry-run'], env: GYM_HOST, files: {[`${RECIPE_DIR}/env.sh`]: 'GYM_HOST=$((\n'}, exit: 2, first: /env\.sh/},
  {id: 'start-docker-unreachable', args: ['start', '{recipe}', '--relax-root', R, '--dry-run'], env: {...GYM_HOST, ...NO_DOCKER}, exit: 3, first: /^Dry run for {recipe} .*nothing was changed\.$/},
  {id: 'start-timeout-negative', args: ['start', '{recipe}', '--relax-root', R, '--timeout', '-5'], env: GYM_HOST, exit: 2, first: /timeout/i},

  // --- train
  {id: 'train-dashboard-unreachable', args: ['train', '{recipe}', '--relax-root', R, '--dry-run'], env: GYM_HOST, exit: 3, first: /^Pre-flight for {recipe} /, mentions: [/<redacted>@127\.0\.0\.1:9/]},
  {id: 'train-headers-line-break', args: ['train', '{recipe}', '--relax-root', R, '--dry-run'], env: {...GYM_HOST, RAY_JOB_HEADERS: '{"Authorization":"Bearer rayPlantedBearer5555\\r\\nX-Evil: 1"}'}, exit: 2, first: /RAY_JOB_HEADERS/},
  {id: 'train-headers-not-json', args: ['train', '{recipe}', '--relax-root', R, '--dry-run'], env: {...GYM_HOST, RAY_JOB_HEADERS: 'Authorization: Bearer rayPlantedBearer5555'}, exit: 2, first: /RAY_JOB_HEADERS/},
  {id: 'train-unknown-recipe', args: ['train', 'nope', '--relax-root', R, '--dry-run'], exit: 2, first: /nope/},
  {id: 'train-env-sh-syntax', args: ['train', '{recipe}', '--relax-root', R, '--dry-run'], files: {[`${RECIPE_DIR}/env.sh`]: 'export GYM_HOST=\'\n'}, exit: 2, first: /env\.sh/},

  // --- verify
  {id: 'verify-static-ok', args: ['verify', '{recipe}', '--relax-root', R, '--gym-root', '{gym}'], exit: 0, first: /^static rung$/, mentions: [/^✔ static rung: pass$/m]},
  {id: 'verify-gym-root-missing', args: ['verify', '{recipe}', '--relax-root', R, '--gym-root', '{ws}/nope'], exit: 2, first: /the Gym root .*nope is not a directory/},
  {id: 'prepare-gym-root-missing', args: ['prepare', '{recipe}', '--relax-root', R, '--gym-root', '{ws}/nope', '--dry-run'], exit: 2, first: /the Gym root .*nope is not a directory/},
  {id: 'start-gym-root-missing', args: ['start', '{recipe}', '--relax-root', R, '--gym-root', '{ws}/nope', '--dry-run'], env: GYM_HOST, exit: 2, first: /the Gym root .*nope is not a directory/},
  {id: 'train-gym-root-missing', args: ['train', '{recipe}', '--relax-root', R, '--gym-root', '{ws}/nope', '--dry-run'], env: GYM_HOST, exit: 2, first: /the Gym root .*nope is not a directory/},
  {id: 'verify-unknown-recipe', args: ['verify', 'nope', '--relax-root', R], exit: 2, first: /nope/},
  {id: 'verify-recipe-yaml-bomb', args: ['verify', '{recipe}', '--relax-root', R], files: {[`${RECIPE_DIR}/recipe.yaml`]: BOMB}, exit: 2, first: /YAML aliases expand too far/},
  {id: 'verify-callback-port-zero', args: ['verify', '{recipe}', '--relax-root', R, '--callback-port', '0'], exit: 2, first: /callback-port/},
  {id: 'verify-env-sh-runs-a-command', args: ['verify', '{recipe}', '--relax-root', R], files: {[`${RECIPE_DIR}/env.sh`]: {append: 'touch "$HOME/pwned"\n'}}, env: {HOME: '{ws}/home'}, exit: 4, first: /^static rung$/, mentions: [/^ {2}✖ env\.sh holds deployment values only: .*touch/m], writes: ['home']},
  {id: 'verify-data-file-missing', args: VERIFY_DATA, env: DATA('nope/{snake}_train.jsonl'), exit: 4, first: /^static rung$/, mentions: [/^ {2}✖ NEMO_GYM_SOURCE_DATA is the raw file, absolute, present and non-empty: .*nope\/corpus_\w+_train\.jsonl does not exist/m]},
  {id: 'verify-data-overflowing-float', args: VERIFY_DATA, env: DATA('d/{snake}_train.jsonl'), files: {'d/{snake}_train.jsonl': `${calRow('"x":1e400')}\n${CAL_ROW}\n`}, exit: 4, first: /^static rung$/, mentions: [/^ {2}✖ every non-empty line is a JSON object: 1 of 2 rows are not JSON objects the input policy accepts/m, /must be a finite number: this float overflows a double/]},
  {id: 'verify-data-deep', args: VERIFY_DATA, env: DATA('d/{snake}_train.jsonl'), files: {'d/{snake}_train.jsonl': `${calRow(`"x":${'['.repeat(100_000)}${']'.repeat(100_000)}`)}\n${CAL_ROW}\n`}, exit: 4, first: /^static rung$/, mentions: [/^ {2}✖ every non-empty line is a JSON object: 1 of 2 rows are not JSON objects the input policy accepts/m, /nested deeper than 512 levels/]},
  {id: 'verify-data-duplicate-key-null', args: VERIFY_DATA, env: DATA('d/{snake}_train.jsonl'), files: {'d/{snake}_train.jsonl': `${calRow('"exp_cal_state":null')}\n`}, exit: 4, first: /^static rung$/, mentions: [/^ {2}✖ every row keeps the fields the agent and verifier need: 1 of 1 rows miss exp_cal_state \(absent or null\): line 1/m]},
  {id: 'verify-data-bom', args: VERIFY_DATA, env: DATA('d/{snake}_train.jsonl'), files: {'d/{snake}_train.jsonl': `\uFEFF${CAL_ROW}\n`}, exit: 4, first: /^static rung$/, mentions: [/^ {2}✖ every non-empty line is a JSON object: the file starts with a UTF-8 byte order mark/m]},
  {id: 'verify-data-invalid-utf8', args: VERIFY_DATA, env: DATA('d/{snake}_train.jsonl'), files: {'d/{snake}_train.jsonl': INVALID_UTF8}, exit: 4, first: /^static rung$/, mentions: [/^ {2}✖ every non-empty line is a JSON object: 1 of 1 rows are not JSON objects the input policy accepts/m, /line 1, byte 34: invalid UTF-8 at byte 34/]},
  {id: 'verify-data-big-numbers-accepted', args: ['verify', '{recipe}', '--only', 'data', '--relax-root', R], env: DATA('d/{snake}_train.jsonl'), files: {'d/{snake}_train.jsonl': `${calRow('"x":[-0,12345678901234567890123,1e-400]')}\n`}, exit: 4, first: /^data rung$/, mentions: [/^ {2}✔ every non-empty line is a JSON object: 1 rows, every one a JSON object$/m, /^ {2}✔ the Relax conversion keeps every verifier field/m]},
  {id: 'verify-data-line-over-limit', args: VERIFY_DATA, env: {...DATA('d/{snake}_train.jsonl'), GYMRECIPE_MAX_LINE_BYTES: '200'}, files: {'d/{snake}_train.jsonl': `${calRow(`"x":"${'y'.repeat(400)}"`)}\n`}, exit: 4, first: /^static rung$/, mentions: [/^ {2}✖ every non-empty line is a JSON object: 1 of 1 rows are not JSON objects the input policy accepts/m, /line is longer than the 200 bytes limit/]},

  // --- logs
  {id: 'logs-unknown-recipe', args: ['logs', 'nope', '--relax-root', R], exit: 2, first: /nope/},
  {id: 'logs-tail-negative', args: ['logs', '{recipe}', '--relax-root', R, '--tail', '-1'], exit: 2, first: /tail/},
  {id: 'status-docker-host-tcp', args: ['status', '{recipe}', '--relax-root', R], env: {DOCKER_HOST: 'tcp://10.0.0.1:2375'}, exit: 0, first: /{recipe}/, mentions: [/DOCKER_HOST=tcp:\/\/10\.0\.0\.1:2375 is not supported/]},
  {id: 'doctor-docker-host-tcp', args: ['doctor'], env: {DOCKER_HOST: 'tcp://10.0.0.1:2375'}, exit: 3, first: /./, mentions: [/DOCKER_HOST=tcp:\/\/10\.0\.0\.1:2375 is not supported/]},
  {id: 'logs-docker-host-tcp', args: ['logs', '{recipe}', '--relax-root', R], env: {DOCKER_HOST: 'tcp://10.0.0.1:2375'}, exit: 3, first: /^DOCKER_HOST=tcp:\/\/10\.0\.0\.1:2375 is not supported/},
  {id: 'logs-docker-unreachable', args: ['logs', '{recipe}', '--relax-root', R], env: NO_DOCKER, exit: 3, first: /Docker daemon is not reachable/},

  // --- --json: the same promises hold for the machine-readable output
  {id: 'json-new', args: [...NEW('fresh'), '--json'], exit: 0, first: /^\{$/, writes: ['relax/examples/nemo_gym_agentic/recipes/fresh']},
  {id: 'json-inspect', args: ['inspect', '--gym-root', '{gym}', '--gym-config', 'environments/calendar/config.yaml', '--json'], exit: 0, first: /^\{$/},
  {id: 'json-build', args: [...BUILD(), '--json'], exit: 0, first: /^\{$/, writes: ['out.jsonl']},
  {id: 'json-export', args: [...EXPORT(), '--json'], exit: 0, first: /^\{$/, writes: ['out.jsonl']},
  {id: 'json-ingest', args: INGEST(['--json']), exit: 0, first: /^\{$/, writes: ['out.jsonl']},
  {id: 'json-call-dry-run', args: CALL('{ws}/call-rows.jsonl', '{ws}/call.yaml', '--dry-run', '--json'), exit: 0, first: /^\{$/},
  {id: 'json-call-dry-run-numbers-as-sent', args: CALL('{ws}/r.jsonl', '{ws}/call.yaml', '--dry-run', '--json'), files: {'r.jsonl': '{"id":"a","q":12345678901234567890123}\n'}, exit: 0, first: /^\{$/, mentions: [/"question": 12345678901234567890123\n/]},
  {id: 'json-status', args: ['status', '{recipe}', '--relax-root', R, '--json'], env: NO_DOCKER, exit: 0, first: /^\{$/},
  {id: 'json-prepare-dry-run', args: ['prepare', '{recipe}', '--relax-root', R, '--dry-run', '--json'], exit: 0, first: /^\{$/},
  {id: 'json-start-dry-run', args: ['start', '{recipe}', '--relax-root', R, '--dry-run', '--json'], env: {...GYM_HOST, ...NO_DOCKER}, exit: 3, first: /^E_PRECONDITION: start would not run: unknown: the Docker daemon is not reachable/},
  {id: 'json-train-dry-run', args: ['train', '{recipe}', '--relax-root', R, '--dry-run', '--json'], env: GYM_HOST, exit: 3, first: /^E_TRAIN_PREFLIGHT_FAILED: pre-flight failed \(/, mentions: [/<redacted>@127\.0\.0\.1:9/]},
  {id: 'json-train-headers-line-break', args: ['train', '{recipe}', '--relax-root', R, '--dry-run', '--json'], env: {...GYM_HOST, RAY_JOB_HEADERS: '{"Authorization":"Bearer rayPlantedBearer5555\\r\\nX-Evil: 1"}'}, exit: 2, first: /^E_RAY_HEADERS: /},
  {id: 'json-verify-static', args: ['verify', '{recipe}', '--relax-root', R, '--json'], exit: 0, first: /^\{$/},
  {id: 'json-verify-data', args: [...VERIFY_DATA, '--json'], env: DATA('d/{snake}_train.jsonl'), files: {'d/{snake}_train.jsonl': `${calRow('"x":1e400')}\n`}, exit: 4, first: /^E_RUNG_FAILED: the data rung failed: /, mentions: [/"id": "data\.rows",\s+"title": "[^"]+",\s+"status": "fail"/]},
  {id: 'json-logs-docker-unreachable', args: ['logs', '{recipe}', '--relax-root', R, '--json'], env: NO_DOCKER, exit: 3, first: /^E_DOCKER_UNREACHABLE: Docker daemon is not reachable/},
  {id: 'json-doctor', args: ['doctor', '--json'], exit: 0, first: /^\{$/},

  // === Second audit: injection through values
  {id: 'inj-verify-env-default-runs-command', args: ['verify', '{recipe}', '--relax-root', R], files: {[ENV_SH]: {append: 'export GYM_HOST="${GYM_HOST:-$(touch {ws}/pwned)}"\n'}}, exit: 4, first: /^static rung$/, mentions: [/^ {2}✖ env\.sh holds deployment values only: .*command substitution/m]},
  {id: 'inj-status-env-default-runs-command', args: ['status', '{recipe}', '--relax-root', R], env: NO_DOCKER, files: {[ENV_SH]: {append: 'export GYM_HOST="${GYM_HOST:-$(touch {ws}/pwned)}"\n'}}, exit: 2, first: /env\.sh:\d+: .*command substitution/},
  {id: 'inj-handoff-env-default-runs-command', args: ['handoff', '{recipe}', '--relax-root', R], env: NO_DOCKER, files: {[ENV_SH]: {append: 'export GYM_HOST="${GYM_HOST:-$(touch {ws}/pwned)}"\n'}}, exit: 0, first: /hand-off/, mentions: [/env\.sh is not sourced: it holds command substitution/]},
  {id: 'inj-data-env-backticks', args: VERIFY_DATA, env: DATA('d/{snake}_train.jsonl'), files: {'d/{snake}_train.jsonl': `${CAL_ROW}\n`, [ENV_SH]: {append: 'export GYM_HOST=`touch {ws}/pwned`\n'}}, exit: 4, first: /^static rung$/, mentions: [/backtick/]},
  {id: 'inj-prepare-env-process-substitution', args: ['prepare', '{recipe}', '--relax-root', R, '--dry-run'], files: {[ENV_SH]: {append: 'export X="$(cat <(touch {ws}/pwned))"\n'}}, exit: 2, first: /env\.sh:\d+: /},
  {id: 'inj-train-env-arithmetic', args: ['train', '{recipe}', '--relax-root', R, '--dry-run'], env: GYM_HOST, files: {[ENV_SH]: {append: 'export X=$[1+1]\n'}}, exit: 2, first: /env\.sh:\d+: .*arithmetic expansion/},
  {id: 'inj-start-timeout-subscript', args: ['verify', '{recipe}', '--relax-root', R], files: {[ENV_SH]: {append: "export NEMO_GYM_START_TIMEOUT_S='GATEWAY_PORT[$(touch {ws}/pwned)0]'\n"}}, exit: 4, first: /^static rung$/, mentions: [/✖ env\.sh holds deployment values only: .*command substitution/]},
  {id: 'inj-env-command-after-assignment', args: ['status', '{recipe}', '--relax-root', R], env: NO_DOCKER, files: {[ENV_SH]: {append: 'GYM_HOST=x; touch {ws}/pwned\n'}}, exit: 2, first: /env\.sh:\d+: .*not a plain NAME=value assignment/},
  {id: 'inj-env-eval', args: ['status', '{recipe}', '--relax-root', R], env: NO_DOCKER, files: {[ENV_SH]: {append: 'eval "touch {ws}/pwned"\n'}}, exit: 2, first: /env\.sh:\d+: /},
  {id: 'inj-env-source-other', args: ['status', '{recipe}', '--relax-root', R], env: NO_DOCKER, files: {'other.sh': 'touch {ws}/pwned\n', [ENV_SH]: {append: 'source {ws}/other.sh\n'}}, exit: 2, first: /env\.sh:\d+: /},
  {id: 'inj-env-expansion-with-pattern', args: ['status', '{recipe}', '--relax-root', R], env: NO_DOCKER, files: {[ENV_SH]: {append: 'export A="${HOME/x/y}"\n'}}, exit: 2, first: /env\.sh:\d+: .*not a plain \$\{NAME\}/},
  {id: 'inj-env-trusted-runs', args: ['status', '{recipe}', '--relax-root', R], env: {...NO_DOCKER, GYMRECIPE_TRUST_ENV_SH: '1'}, files: {[ENV_SH]: {append: 'touch {ws}/trusted\n'}}, exit: 0, first: /{recipe}/, writes: ['trusted']},
  {id: 'inj-new-model-command', args: NEW('x', '--model', 'Qwen$(id)', '--model-config', 'qwen3-4B.sh'), exit: 2, first: /^cannot make recipe x: 3 value\(s\) are not allowed:$/, mentions: [/\/training\/model\/name "Qwen\$\(id\)" \(from --model\)/]},
  {id: 'inj-new-model-slug-separator', args: NEW('x', '--model', 'Qwen3-4B', '--model-slug', 'a;b', '--model-config', 'qwen3-4B.sh'), exit: 2, first: /^cannot make recipe x: /, mentions: [/"a;b" \(from --model-slug/]},
  {id: 'inj-new-gym-key-command', args: ['new', 'x', '--gym-root', '{ws}/g', '--gym-config', 'c.yaml', '--from', 'calendar', '--relax-root', R], files: {'g/c.yaml': CALENDAR_AGENT_KEYED('"cal$(id)"')}, exit: 2, first: /^cannot make recipe x: 1 value\(s\) are not allowed:$/, mentions: [/\/gym\/agent\/name "cal\$\(id\)" \(from the Gym config c\.yaml\)/]},
  {id: 'inj-inspect-key-escape-sequence', args: ['inspect', '--gym-root', '{ws}/g', '--gym-config', 'c.yaml'], files: {'g/c.yaml': CALENDAR_AGENT_KEYED('"cal\\e]0;pwned\\a\\e[2J\\rX"')}, exit: 0, first: /^Gym root/, mentions: [/cal\\x1b\]0;pwned\\x07\\x1b\[2J\\rX/]},
  {id: 'inj-new-gym-key-escape-sequence', args: ['new', 'x', '--gym-root', '{ws}/g', '--gym-config', 'c.yaml', '--from', 'calendar', '--relax-root', R], files: {'g/c.yaml': CALENDAR_AGENT_KEYED('"cal\\e[2J"')}, exit: 2, first: /^cannot make recipe x: /, mentions: [/cal\\u001b\[2J/]},
  {id: 'inj-pitfall-escape-sequence', args: ['pitfall', 'add', '{recipe}', '--relax-root', R, '--symptom', 'a\u001b[2Jb', '--cause', 'y', '--fix', 'z'], exit: 2, first: /the symptom holds a control character/},
  {id: 'inj-pitfall-carriage-return', args: ['pitfall', 'add', '{recipe}', '--relax-root', R, '--symptom', 'real\rfake', '--cause', 'y', '--fix', 'z'], exit: 2, first: /the symptom must be one line/},
  {id: 'inj-rows-shell-text-is-data', args: BUILD('{ws}/r.jsonl'), files: {'r.jsonl': '{"seed_id": 1, "user_query": "$(touch {ws}/pwned) `id`", "system_prompt": "s", "tools_json": "[]", "reference_plan": {"is_valid": true, "tool_calls": []}}\n'}, exit: 0, first: /^Wrote 1 scenario bundle to/, writes: ['out.jsonl']},
  {id: 'inj-call-endpoint-command', args: CALL('{ws}/call-rows.jsonl', '{ws}/c.yaml'), files: {'c.yaml': 'name: v\nendpoint: "http://$(id):9"\nroute: /verify\nrow_id_column: id\n'}, exit: 2, first: /c\.yaml:\d+: invalid call resource config:$/, mentions: [/endpoint/]},
  {id: 'inj-status-recipe-id-command', args: ['status', '$(touch pwned)', '--relax-root', R], exit: 2, first: /recipe id/},
  {id: 'inj-ray-headers-non-string', args: ['train', '{recipe}', '--relax-root', R, '--dry-run'], env: {...GYM_HOST, RAY_JOB_HEADERS: '{"X-Api-Key": {"nested": 1}}'}, exit: 2, first: /RAY_JOB_HEADERS/},
  {id: 'inj-dashboard-port-subscript', args: ['train', '{recipe}', '--relax-root', R, '--dry-run'], env: {...GYM_HOST, RAY_DASHBOARD_ADDRESS: '', RAY_ADDRESS: '', RAY_DASHBOARD_PORT: 'A[$(touch {ws}/pwned)0]'}, exit: 2, first: /RAY_DASHBOARD_PORT/},

  // === Second audit: secrets
  {id: 'secret-dashboard-userinfo-odd-characters', args: ['train', '{recipe}', '--relax-root', R, '--dry-run', '--json'], env: GYM_HOST, secrets: {RAY_DASHBOARD_ADDRESS: 'http://ops:p@ss/w"rdX9@127.0.0.1:9'}, needles: ['p@ss/w"rdX9', 'w"rdX9', 'w%22rdX9'], exit: 3, first: /^E_TRAIN_PREFLIGHT_FAILED: /},
  {id: 'secret-dashboard-userinfo-odd-characters-text', args: ['train', '{recipe}', '--relax-root', R, '--dry-run'], env: GYM_HOST, secrets: {RAY_DASHBOARD_ADDRESS: 'http://ops:p@ss/w"rdX9@127.0.0.1:9'}, needles: ['p@ss/w"rdX9', 'w"rdX9', 'w%22rdX9'], exit: 3, first: /^Pre-flight for {recipe} /},
  {id: 'secret-dashboard-query-token', args: ['train', '{recipe}', '--relax-root', R, '--dry-run', '--json'], env: GYM_HOST, secrets: {RAY_DASHBOARD_ADDRESS: 'http://127.0.0.1:9/?token=qtokPlanted42&x=1'}, needles: ['qtokPlanted42'], exit: 3, first: /^E_TRAIN_PREFLIGHT_FAILED: /},
  {id: 'secret-ray-address-userinfo', args: ['train', '{recipe}', '--relax-root', R, '--dry-run'], env: {...GYM_HOST, RAY_DASHBOARD_ADDRESS: ''}, secrets: {RAY_ADDRESS: 'http://u:rayAddrPw77@127.0.0.1:9'}, needles: ['rayAddrPw77'], exit: 3, first: /^Pre-flight for {recipe} /},
  {id: 'secret-api-server-userinfo', args: ['train', '{recipe}', '--relax-root', R, '--dry-run', '--json'], env: GYM_HOST, secrets: {RAY_API_SERVER_ADDRESS: 'http://u:apiSrvPw88@127.0.0.1:9'}, needles: ['apiSrvPw88'], exit: 3, first: /^E_TRAIN_PREFLIGHT_FAILED: /},
  {id: 'secret-lowercase-token-in-data-path', args: VERIFY_DATA, env: DATA('onlylowercasetokenx/{snake}_train.jsonl'), secrets: {HF_TOKEN: 'onlylowercasetokenx'}, exit: 4, first: /^static rung$/, mentions: [/<redacted>\/corpus_\w+_train\.jsonl does not exist/]},
  {id: 'secret-short-token-in-data-path', args: VERIFY_DATA, env: DATA('q9x7/{snake}_train.jsonl'), secrets: {SESSION_COOKIE: 'q9x7'}, exit: 4, first: /^static rung$/},
  {id: 'secret-marked-variable-in-data-path', args: VERIFY_DATA, env: {...DATA('judgeCredZ5/{snake}_train.jsonl'), GYMRECIPE_SECRET_VARS: 'MY_JUDGE_CRED'}, secrets: {MY_JUDGE_CRED: 'judgeCredZ5'}, exit: 4, first: /^static rung$/},
  {id: 'secret-token-in-data-path-json', args: [...VERIFY_DATA, '--json'], env: DATA('hfPathTok33/{snake}_train.jsonl'), secrets: {HF_TOKEN: 'hfPathTok33'}, exit: 4, first: /^E_RUNG_FAILED: /},
  {id: 'secret-token-in-data-path-handoff', args: ['handoff', '{recipe}', '--relax-root', R, '--write'], env: {...NO_DOCKER, NEMO_GYM_SOURCE_DATA: '{ws}/hoTok44xyz/{snake}_train.jsonl'}, secrets: {HF_TOKEN: 'hoTok44xyz'}, exit: 0, first: /hand-off/, writes: [`${RECIPE_DIR}/README.md`]},
  {id: 'secret-inline-bearer-in-env-sh', args: ['verify', '{recipe}', '--relax-root', R], files: {[ENV_SH]: {append: 'curl -H "Authorization: Bearer inlineBearer55x" http://x\n'}}, needles: ['inlineBearer55x'], exit: 4, first: /^static rung$/, mentions: [/Authorization: Bearer <redacted>/]},
  {id: 'secret-inline-bearer-in-env-sh-json', args: ['verify', '{recipe}', '--relax-root', R, '--json'], files: {[ENV_SH]: {append: 'curl -H "Authorization: Bearer inlineBearer55x" http://x\n'}}, needles: ['inlineBearer55x'], exit: 4, first: /^E_RUNG_FAILED: /},
  {id: 'secret-inline-key-assignment-in-env-sh', args: ['status', '{recipe}', '--relax-root', R], env: NO_DOCKER, files: {[ENV_SH]: {append: 'export MY_API_KEY=inlineKey66y; echo\n'}}, needles: ['inlineKey66y'], exit: 2, first: /env\.sh:\d+: /},
  {id: 'secret-call-token-echoed-encoded', args: CALL('{ws}/call-rows.jsonl', '{ws}/c.yaml'), server: 'echoes-credentials', files: {'c.yaml': 'name: verdict\nendpoint: "{server}"\nroute: /verify\nrow_id_column: id\nrequest_columns: {question: q}\nbearer_token_env: CALL_BEARER\n'}, secrets: {CALL_BEARER: 'callBearerQ1w2e3r4'}, exit: 0, first: /./, writes: ['out.jsonl', 'evidence']},
  {id: 'secret-call-token-in-error-page', args: CALL('{ws}/call-rows.jsonl', '{ws}/c.yaml'), server: 'html-error', files: {'c.yaml': 'name: verdict\nendpoint: "{server}"\nroute: /verify\nrow_id_column: id\nrequest_columns: {question: q}\nbearer_token_env: CALL_BEARER\n'}, secrets: {CALL_BEARER: 'callBearerQ1w2e3r4'}, exit: 1, first: /server_failed 2/, writes: ['out.jsonl', 'evidence']},
  {id: 'secret-call-short-cookie', args: CALL('{ws}/call-rows.jsonl', '{ws}/c.yaml'), server: 'sets-short-cookie', files: {'c.yaml': 'name: verdict\nendpoint: "{server}"\nroute: /verify\nrow_id_column: id\nrequest_columns: {question: q}\nmax_parallel_requests: 1\n'}, needles: ['q7w2e'], exit: 0, first: /./, writes: ['out.jsonl', 'evidence']},
  {id: 'secret-ray-key-in-error-page', args: ['train', '{recipe}', '--relax-root', R, '--dry-run'], env: {...GYM_HOST, RAY_DASHBOARD_ADDRESS: '{server}'}, server: 'html-error', secrets: {RAY_JOB_HEADERS: '{"X-Api-Key": "rayKeyInPage99"}'}, needles: ['rayKeyInPage99'], exit: 3, first: /^Pre-flight for {recipe} /},
  {id: 'secret-ray-token-in-error-page', args: ['train', '{recipe}', '--relax-root', R, '--dry-run', '--json'], env: {...GYM_HOST, RAY_DASHBOARD_ADDRESS: '{server}', RAY_AUTH_MODE: 'token'}, server: 'html-error', secrets: {RAY_AUTH_TOKEN: 'lowercaseraytokenonly'}, exit: 3, first: /^E_TRAIN_PREFLIGHT_FAILED: /},
  {id: 'secret-doctor-json', args: ['doctor', '--json'], secrets: {AWS_SECRET_ACCESS_KEY: 'awsSecretZZ11', GITHUB_TOKEN: 'ghp_plantedGh1234'}, exit: 0, first: /^\{$/},
  {id: 'secret-status-json', args: ['status', '{recipe}', '--relax-root', R, '--json'], env: NO_DOCKER, secrets: {WANDB_API_KEY: 'wandbStatusKey12'}, exit: 0, first: /^\{$/},

  // === Second audit: hostile servers
  ...(['redirect', 'redirect-offhost', 'endless', 'declares-huge', 'cut-short', 'not-http', 'wrong-json', 'escape-sequences', 'html-error', 'drips'] as const).flatMap((server): BadInput[] => [
    {id: `server-ray-${server}`, args: ['train', '{recipe}', '--relax-root', R, '--dry-run'], env: {...GYM_HOST, RAY_DASHBOARD_ADDRESS: 'http://corpususer:PlantedPw4242@127.0.0.1:{port}'}, server, exit: 3, first: /^Pre-flight for {recipe} /, mentions: [RAY_SAYS[server]]},
    {id: `server-call-${server}`, args: CALL('{ws}/call-rows.jsonl', '{ws}/c.yaml'), server, files: {'c.yaml': `name: verdict\nendpoint: "{server}"\nroute: /verify\nrow_id_column: id\nrequest_columns: {question: q}\ntimeout: ${CALL_TIMEOUT_S[server] ?? 3}\n`}, secrets: {CALL_BEARER: 'callBearerQ1w2e3r4'}, exit: CALL_EXIT[server], first: /./, mentions: [CALL_SAYS[server]], writes: ['out.jsonl', 'evidence']},
  ]),
  ...(['readyz-partial', 'endless', 'not-http', 'escape-sequences', 'redirect', 'cut-short'] as const).map((server): BadInput => ({id: `server-status-gateway-${server}`, args: ['status', '{recipe}', '--relax-root', R], env: {...NO_DOCKER, GYM_HOST: '127.0.0.1', NEMO_GYM_GATEWAY_PORT: '{port}'}, server, exit: 0, first: /{recipe}/, mentions: [STATUS_SAYS[server]]})),
  {id: 'server-ray-stalls', args: ['train', '{recipe}', '--relax-root', R, '--dry-run'], env: {...GYM_HOST, RAY_DASHBOARD_ADDRESS: '{server}'}, server: 'stalls', exit: 3, first: /^Pre-flight for {recipe} /, mentions: [/no complete answer within \d+ s/]},
  {id: 'server-call-stalls-sigterm', args: CALL('{ws}/call-rows.jsonl', '{ws}/c.yaml'), server: 'stalls', sigtermAfterMs: 3000, files: {'c.yaml': 'name: verdict\nendpoint: "{server}"\nroute: /verify\nrow_id_column: id\nrequest_columns: {question: q}\n'}, exit: 130, first: /./, writes: ['out.jsonl', 'evidence']},

  // === Second audit: crash consistency and concurrency
  {id: 'crash-export-fifo-no-reader-sigterm', args: ['tasks', 'export', '{ws}/bundles.jsonl', '-o', '{ws}/out.fifo'], files: {'out.fifo': {fifo: true}}, sigtermAfterMs: 2000, exit: 130, first: /^interrupted \(SIGTERM\)/},
  {id: 'crash-build-fifo-no-reader-sigterm', args: ['tasks', 'build', '{ws}/rows.jsonl', '--spec', '{ws}/spec.yaml', '-o', '{ws}/out.fifo'], files: {'out.fifo': {fifo: true}}, sigtermAfterMs: 2000, exit: 130, first: /^interrupted \(SIGTERM\)/},
  {id: 'crash-ingest-fifo-no-reader-sigterm', args: ['rollouts', 'ingest', '--tasks', '{ws}/tasks.jsonl', '--rollouts', '{ws}/rollouts.jsonl', '-o', '{ws}/out.fifo'], files: {'out.fifo': {fifo: true}}, sigtermAfterMs: 2000, exit: 130, first: /^interrupted \(SIGTERM\)/},
  {id: 'fs-rows-is-fifo', args: BUILD('{ws}/in.fifo'), files: {'in.fifo': {fifo: true}}, exit: 2, first: /in\.fifo is a pipe, not a JSONL file/},
  {id: 'crash-call-lock-from-dead-process', args: CALL(), files: {'evidence/.gymrecipe.lock': '{"pid":2147483646,"host":"{host}","since":"2026-12-01T00:00:00Z","processStart":"1","what":"gymrecipe resource call"}\n'}, exit: 1, first: /^call resource verdict: 2 rows, 0 completed, 2 failed/, writes: ['out.jsonl', 'evidence']},
  {id: 'crash-call-lock-garbage', args: CALL(), files: {'evidence/.gymrecipe.lock': '\u0000\u0001not json'}, exit: 3, first: /evidence is in use/},
  {id: 'crash-stale-temporary-ignored', args: BUILD(), files: {'.out.jsonl.4242.deadbeef.tmp': 'half a file'}, exit: 0, first: /^Wrote 1 scenario bundle to/, writes: ['out.jsonl']},
  {id: 'crash-output-replaced-whole', args: BUILD(), files: {'out.jsonl': '{"half": '}, exit: 0, first: /^Wrote 1 scenario bundle to/, writes: ['out.jsonl']},
  {id: 'crash-recipe-yaml-truncated', args: ['status', '{recipe}', '--relax-root', R], files: {[`${RECIPE_DIR}/recipe.yaml`]: 'schema_version: 1\nid: {recipe}\narchetype: simple-agent\ndescrip'}, exit: 2, first: /recipe\.yaml/},
  {id: 'crash-ladder-state-garbage', args: ['status', '{recipe}', '--relax-root', R], env: NO_DOCKER, files: {'.state/gymrecipe/ladder.json': '{"rungs": '}, exit: 0, first: /{recipe}/},
  {id: 'crash-update-base-mismatch', args: NEW('{recipe}', '--update', '--port-base', '21000'), files: {[`${RECIPE_DIR}/.gymrecipe/last-generated/env.sh`]: '# not what was generated\n'}, exit: 3, first: /{recipe}/, mentions: [/does not match the hash recorded in recipe\.yaml/, /conflict/], writes: [RECIPE_DIR]},
  {id: 'crash-call-resume-without-evidence', args: CALL('{ws}/call-rows.jsonl', '{ws}/call.yaml', '--resume'), exit: 1, first: /^call resource verdict: 2 rows, 0 completed, 2 failed/, writes: ['out.jsonl', 'evidence']},

  // === Second audit: file-system oddities
  {id: 'fs-env-sh-is-fifo', args: ['status', '{recipe}', '--relax-root', R], files: {[ENV_SH]: {fifo: true}}, exit: 2, first: /env\.sh: env\.sh is a pipe \(FIFO\), not a file$/},
  {id: 'fs-recipe-yaml-is-fifo', args: ['verify', '{recipe}', '--relax-root', R], files: {[`${RECIPE_DIR}/recipe.yaml`]: {fifo: true}}, exit: 2, first: /recipe\.yaml: recipe\.yaml is a pipe \(FIFO\), not a file$/},
  {id: 'fs-recipe-yaml-dev-zero', args: ['status', '{recipe}', '--relax-root', R], files: {[`${RECIPE_DIR}/recipe.yaml`]: {link: '/dev/zero'}}, exit: 2, first: /recipe\.yaml: recipe\.yaml is a device, not a file$/},
  {id: 'fs-env-sh-is-folder', args: ['status', '{recipe}', '--relax-root', R], files: {[ENV_SH]: {link: '.gymrecipe'}}, exit: 2, first: /env\.sh: env\.sh is a folder, not a file$/},
  {id: 'fs-recipe-yaml-oversized', args: ['status', '{recipe}', '--relax-root', R], files: {[`${RECIPE_DIR}/recipe.yaml`]: `# ${'x'.repeat(5 << 20)}\n`}, exit: 2, first: /recipe\.yaml: recipe\.yaml is \d+ bytes, over the 4194304-byte limit for it$/},
  {id: 'fs-env-sh-nul', args: ['status', '{recipe}', '--relax-root', R], files: {[ENV_SH]: 'export GYM_HOST=a\u0000b\n'}, exit: 2, first: /env\.sh:1: .*NUL/},
  {id: 'fs-recipe-yaml-invalid-utf8', args: ['status', '{recipe}', '--relax-root', R], files: {[`${RECIPE_DIR}/recipe.yaml`]: Uint8Array.from([...Buffer.from('id: caf'), 0xc3, 0x28, 0x0a])}, exit: 2, first: /recipe\.yaml:1: .*not valid UTF-8/},
  {id: 'fs-call-config-is-fifo', args: CALL('{ws}/call-rows.jsonl', '{ws}/c.yaml'), files: {'c.yaml': {fifo: true}}, exit: 2, first: /c\.yaml: the call config is a pipe \(FIFO\), not a file$/},
  {id: 'fs-task-spec-is-fifo', args: ['tasks', 'build', '{ws}/rows.jsonl', '--spec', '{ws}/s.yaml', '-o', '{ws}/out.jsonl'], files: {'s.yaml': {fifo: true}}, exit: 2, first: /s\.yaml: the task spec is a pipe \(FIFO\), not a file$/},
  {id: 'fs-verifier-file-is-fifo', args: NEW('x', '--verifier', '{ws}/v.yaml'), files: {'v.yaml': {fifo: true}}, exit: 2, first: /^Error: Parsing --verifier/, mentions: [/v\.yaml exists but is not a file/]},
  {id: 'fs-call-config-oversized', args: CALL('{ws}/call-rows.jsonl', '{ws}/c.yaml'), files: {'c.yaml': `# ${'x'.repeat(5 << 20)}\nname: v\n`}, exit: 2, first: /c\.yaml: the call config is \d+ bytes, over the 4194304-byte limit for it$/},
  {id: 'fs-call-evidence-read-only', args: ['call', 'resource', '{ws}/call-rows.jsonl', '--config', '{ws}/call.yaml', '-o', '{ws}/out.jsonl', '-e', '{ws}/ro/evidence'], mounts: [{at: 'ro', size: '1m', readOnly: true}], exit: 1, first: /ro\/evidence.*read-only file system \(EROFS\)/},
  {id: 'fs-output-name-with-newline', args: ['tasks', 'build', '{ws}/rows.jsonl', '--spec', '{ws}/spec.yaml', '-o', '{ws}/odd\nname.jsonl'], exit: 0, first: /^Wrote 1 scenario bundle to/, writes: ['odd\nname.jsonl']},
  {id: 'fs-output-symlink-hint-without-flag', args: ['pitfall', 'add', '{recipe}', '--relax-root', R, '--symptom', 'a', '--cause', 'y', '--fix', 'z'], files: {'elsewhere.md': '# x\n', [`${RECIPE_DIR}/PITFAIL.md`]: {link: '../../../../../elsewhere.md'}}, exit: 2, first: /PITFAIL\.md is a symbolic link/, mentions: [/Pass the file itself \(\S+elsewhere\.md\)/]},
  {id: 'fs-rows-proc-file', args: BUILD('/proc/self/status'), exit: 2, first: /^\/proc\/self\/status:1: invalid JSON/},

  // === Second audit: adversarial Gym configs
  {id: 'gym-config-nul', args: ['inspect', '--gym-root', '{ws}/g', '--gym-config', 'c.yaml'], files: {'g/c.yaml': 'a:\n  b: "x\u0000y"\n'}, exit: 2, first: /c\.yaml:2: .*NUL/},
  {id: 'gym-config-invalid-utf8', args: ['inspect', '--gym-root', '{ws}/g', '--gym-config', 'c.yaml'], files: {'g/c.yaml': Uint8Array.from([...Buffer.from('a:\n  b: caf'), 0xc3, 0x28, 0x0a])}, exit: 2, first: /c\.yaml:2: .*not valid UTF-8/},
  {id: 'gym-config-oversized', args: ['inspect', '--gym-root', '{ws}/g', '--gym-config', 'c.yaml'], files: {'g/c.yaml': `# ${'x'.repeat(2 << 20)}\na: 1\n`}, exit: 2, first: /c\.yaml: the Gym config is \d+ bytes, over the 1048576-byte limit for it$/},
  {id: 'gym-config-self-alias', args: ['inspect', '--gym-root', '{ws}/g', '--gym-config', 'c.yaml'], files: {'g/c.yaml': 'a: &x [*x]\n'}, exit: 2, first: /c\.yaml/},
  {id: 'gym-config-interpolation-bomb', args: ['inspect', '--gym-root', '{ws}/g', '--gym-config', 'c.yaml'], files: {'g/c.yaml': INTERPOLATION_BOMB}, exit: 2, first: /c\.yaml|interpolation/},
  {id: 'gym-config-reference-chain', args: ['inspect', '--gym-root', '{ws}/g', '--gym-config', 'c.yaml'], files: {'g/c.yaml': REFERENCE_CHAIN}, exit: 0, first: /^Gym root/},
  {id: 'gym-config-duplicate-key', args: ['inspect', '--gym-root', '{ws}/g', '--gym-config', 'c.yaml'], files: {'g/c.yaml': 'a: 1\nb: 2\na: 3\n'}, exit: 2, first: /c\.yaml:3: /},
  {id: 'gym-config-deep-nesting', args: ['inspect', '--gym-root', '{ws}/g', '--gym-config', 'c.yaml'], files: {'g/c.yaml': `${'['.repeat(20_000)}${']'.repeat(20_000)}\n`}, exit: 2, first: /c\.yaml/},
  {id: 'gym-config-is-fifo', args: ['inspect', '--gym-root', '{ws}/g', '--gym-config', 'c.yaml'], files: {'g/c.yaml': {fifo: true}}, exit: 2, first: /c\.yaml: the Gym config is a pipe \(FIFO\), not a file$/},
  {id: 'gym-config-include-fifo', args: ['inspect', '--gym-root', '{ws}/g', '--gym-config', 'c.yaml'], files: {'g/c.yaml': 'config_paths: [inc.yaml]\n', 'g/inc.yaml': {fifo: true}}, exit: 2, first: /inc\.yaml/},
  {id: 'gym-config-many-agents', args: ['new', 'x', '--gym-root', '{ws}/g', '--gym-config', 'c.yaml', '--from', 'calendar', '--relax-root', R], files: {'g/c.yaml': MANY_AGENTS}, exit: 2, first: /agent/},
  {id: 'gym-config-dataset-escapes-root', args: ['new', 'x', '--gym-root', '{ws}/g', '--gym-config', 'c.yaml', '--from', 'calendar', '--relax-root', R], files: {'g/c.yaml': CALENDAR_AGENT_KEYED('cal').replace('environments/calendar/data/train.jsonl', '../../../../etc/passwd')}, exit: 2, first: /^dataset train has jsonl_fpath "\.\.\/\.\.\/\.\.\/\.\.\/etc\/passwd", which points outside the Gym root$/},
  {id: 'gym-config-key-with-newline', args: ['inspect', '--gym-root', '{ws}/g', '--gym-config', 'c.yaml'], files: {'g/c.yaml': CALENDAR_AGENT_KEYED('"cal\\nfake line"')}, exit: 0, first: /^Gym root/, mentions: [/^ {2}cal\\nfake line {2}type: simple_agent$/m]},
  {id: 'gym-config-list-root', args: ['new', 'x', '--gym-root', '{ws}/g', '--gym-config', 'c.yaml', '--relax-root', R], files: {'g/c.yaml': '- a\n- b\n'}, exit: 2, first: /c\.yaml/},
  {id: 'gym-config-binary', args: ['inspect', '--gym-root', '{ws}/g', '--gym-config', 'c.yaml'], files: {'g/c.yaml': Uint8Array.from(Array.from({length: 4096}, (_, i) => (i * 7919) % 256))}, exit: 2, first: /c\.yaml/},
]

#!/usr/bin/env bash
# The README's quick start (`npm run demo`, after `npm run build`): generate the Calendar recipe
# from the bundled NeMo Gym config into a scratch Relax checkout, then climb the static rung on it.
#
# The scratch checkout is a copy of the miniature Relax the tests use (test/fixtures/relax-checkout:
# the model configs a training script sources, run_training.sh, convert_dataset.py, an emulated
# Gym image), at GYMRECIPE_DEMO_ROOT (default /tmp/gymrecipe-demo). A folder there is replaced only
# when an earlier demo made it; anything else is left alone.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
root="${GYMRECIPE_DEMO_ROOT:-/tmp/gymrecipe-demo}"
marker=".gymrecipe-demo"
gym_root="${repo}/test/fixtures/nemo-gym-snapshot"
gymrecipe=(node "${repo}/bin/run.js")

if [[ ! -f "${repo}/dist/index.js" ]]; then
  echo "demo: the CLI is not built; run npm run build first (npm run demo does)" >&2
  exit 2
fi
if [[ -e "${root}" || -L "${root}" ]]; then
  if [[ -L "${root}" || ! -f "${root}/${marker}" ]]; then
    echo "demo: ${root} exists and was not made by this demo; it is left as it is" >&2
    echo "hint: set GYMRECIPE_DEMO_ROOT to a folder that does not exist yet" >&2
    exit 2
  fi
  rm -rf -- "${root}"
fi

mkdir -p -- "${root}"
cp -R "${repo}/test/fixtures/relax-checkout/." "${root}/"
echo "made by gymrecipe's demo (scripts/demo.sh); safe to delete" >"${root}/${marker}"
echo "demo: a scratch Relax checkout at ${root}"

"${gymrecipe[@]}" new calendar --from calendar --gym-root "${gym_root}" \
  --gym-config environments/calendar/config.yaml --relax-root "${root}"
"${gymrecipe[@]}" verify calendar --level static --relax-root "${root}" --gym-root "${gym_root}"

echo
echo "demo: the recipe is in ${root}/examples/nemo_gym_agentic/recipes/calendar; next, without changing anything:"
echo "  ./bin/run.js prepare calendar --relax-root ${root} --dry-run"
echo "  ./bin/run.js handoff calendar --relax-root ${root}"

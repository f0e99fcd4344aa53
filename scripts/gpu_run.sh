#!/usr/bin/env bash
# The GPU half of scripts/gpu_train.py: run on the lent machine from the repository root,
# with .gpu/ (prepared data, fp16 base) and .whl/ (pydantic wheels for its Python) carried.
# Usage: bash scripts/gpu_run.sh OUT_DIR NLI_BUDGET_MIN INJECTION_BUDGET_MIN
set -uo pipefail
# (DEVICE=cpu MAX_STEPS=3 SKIP_WHEELS=1 try it on a machine without a GPU)
out=${1:?out dir}; nli_min=${2:-6.5}; inj_min=${3:-4}
device=${DEVICE:-cuda}; steps=${MAX_STEPS:+--max-steps $MAX_STEPS}
if [ -z "${SKIP_WHEELS:-}" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'cuda', torch.cuda.is_available())"
python3 -c "import ragtrust.training.nli, ragtrust.training.injection" || exit 1
python3 scripts/gpu_train.py widen .gpu/base /tmp/base || exit 1
pids=()
(python3 scripts/gpu_train.py train nli --data-file .gpu/nli.jsonl.xz --base /tmp/base --out /tmp/nli \
    --device "$device" $steps --epochs 5 --budget-min "$nli_min" --lr 5e-5 --seed 42 > "$out/nli.log" 2>&1 \
 && python3 scripts/gpu_train.py pack /tmp/nli --base /tmp/base --dest "$out" --name nli) &
pids+=($!)
(python3 scripts/gpu_train.py train injection --data-file .gpu/injection.jsonl.xz --base /tmp/base --out /tmp/inj \
    --device "$device" $steps --epochs 3 --budget-min "$inj_min" --lr 5e-5 --seed 42 > "$out/injection.log" 2>&1 \
 && python3 scripts/gpu_train.py pack /tmp/inj --base /tmp/base --dest "$out" --name injection) &
pids+=($!)
while [ -n "$(jobs -r)" ]; do
    sleep ${POLL_S:-30}
    echo "$(date +%T) nli: $(grep -c '^step' "$out/nli.log") lines, $(tail -n1 "$out/nli.log" | cut -c1-120)"
    echo "$(date +%T) inj: $(tail -n1 "$out/injection.log" | cut -c1-120)"
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done  # a failed training or pack fails the script
ls -la "$out"
exit "$status"

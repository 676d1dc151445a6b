#!/usr/bin/env bash
# The documented user install, alone: a clean virtualenv with `pip install .` (no extras, no
# dev tools), then every command on the bundled examples with model-free metrics. A module
# imported but not declared, or any traceback, fails it: the class of bug where a dependency
# arrived only through the dev extras and `ragmeter compare` crashed for users. (`make lint`
# also runs ../shared/tools/undeclared-imports, when present, against the full environment.)
#
# Usage: scripts/smoke-plain-install.sh [PYTHON]   (run from the repository root; default python3)
set -euo pipefail
python=${1:-python3}
root=$(pwd)
work=$(mktemp -d -t ragmeter-smoke-XXXXXX)
trap 'rm -rf "$work"' EXIT
started=$(date +%s)

"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --upgrade pip
"$work/venv/bin/pip" install -q "$root"
rag="$work/venv/bin/ragmeter"
export RAGMETER_CACHE_DIR="$work/cache"
cd "$work"

failures=0
# run EXPECTED_EXIT DESCRIPTION COMMAND...: the command must exit as expected, print no traceback.
run() {
  local expected=$1 what=$2
  shift 2
  local status=0
  "$@" >"$work/out.txt" 2>&1 || status=$?
  if [ "$status" -ne "$expected" ] || grep -q "Traceback (most recent call last)" "$work/out.txt"; then
    echo "FAIL: $what (exit $status, expected $expected)"
    tail -n 20 "$work/out.txt"
    failures=$((failures + 1))
  else
    echo "ok:   $what"
  fi
}

examples=("$root/examples/dev_platform_en.jsonl" "$root/examples/dev_platform_zh.jsonl")
printf 'token_f1: 0.1\nrougeL: {min: 0.05, on: ci_low}\nlatency_ms: {max: 100000}\n' >thresholds.yaml
printf '{"id": "en-01", "label": 1}\n{"id": "en-02", "label": 0}\n{"id": "en-03", "label": 1}\n{"id": "zh-01", "label": 1}\n' >labels.jsonl

run 0 "--help" "$rag" --help
run 0 "metrics" "$rag" metrics
run 0 "eval (model-free)" "$rag" eval "${examples[@]}" -m model-free -o run_a --no-progress
run 0 "eval again (resumed from the run)" "$rag" eval "${examples[@]}" -m model-free -o run_a --no-progress
run 0 "eval of one file" "$rag" eval "${examples[0]}" -m token_f1,rougeL,ndcg@5,hit_rate@3,latency_ms -o run_b --no-progress
run 0 "report" "$rag" report run_a
run 0 "compare" "$rag" compare run_a run_b -o compared
run 0 "gate (thresholds and baseline)" "$rag" gate run_b --thresholds thresholds.yaml --baseline run_a --junit gate.xml
run 0 "calibrate" "$rag" calibrate run_a --labels labels.jsonl --metric token_f1
run 0 "pairwise --help" "$rag" pairwise --help
run 0 "bench --help" "$rag" bench --help
run 0 "eval --dry-run without the local judge installed" "$rag" eval "${examples[0]}" --dry-run -o never
run 0 "eval --store (a SQLite file)" "$rag" eval "${examples[0]}" -m token_f1 -o run_s --no-progress --store runs.db
run 0 "runs import" "$rag" runs import run_b --store runs.db --tag smoke
run 0 "runs list" "$rag" runs list --store runs.db
run 0 "traces export --help" "$rag" traces export --help
run 0 "monitor --once (no trace yet)" "$rag" monitor -m latency_ms --store runs.db --once
run 0 "drift kb (first run writes the baseline)" "$rag" drift kb "$root/examples/knowledge_base" --baseline kb.json
run 0 "drift kb (unchanged)" "$rag" drift kb "$root/examples/knowledge_base" --baseline kb.json
run 0 "drift scores (too few runs: nothing checked)" "$rag" drift scores -m token_f1 --store runs.db
# Errors users cause end in one line and exit 2, without a traceback.
run 2 "runs show of an unknown run" "$rag" runs show no-such-run --store runs.db
run 2 "a PostgreSQL store without the postgres extra" "$rag" runs list --store postgresql://nobody@127.0.0.1:1/db
run 2 "serve without the dashboard extra" "$rag" serve --store runs.db
run 2 "eval of a missing file" "$rag" eval missing.jsonl -o run_c
run 2 "eval with an unknown metric" "$rag" eval "${examples[0]}" -m no_such_metric -o run_c
run 2 "gate of a directory that is not a run" "$rag" gate "$work" --thresholds thresholds.yaml
run 2 "compare with a missing run" "$rag" compare run_a missing_run
run 2 "LLM metric without the local judge installed" "$rag" eval "${examples[0]}" -m faithfulness -o run_c

echo "plain-install smoke: $failures failure(s), $(($(date +%s) - started)) s"
[ "$failures" -eq 0 ]

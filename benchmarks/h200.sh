#!/usr/bin/env bash
# Runs ktui's GPU checks on the lent H200 (the device tool), from the repository root:
#   bash benchmarks/h200.sh STEP...      steps: info spy examples latency tests cases gpu-cases gpu-rest gpu-more gpu-huge
#                                        profile json trace variants round10a round10b
# Each step fits one 10-minute call only on a fast run: on the 2026-12-01 H200 run gpu-cases alone took over 570 s.
# Carry `.device` (CuTeDSL, made by ../shared/device/pack-cute-dsl) and `.whl` (watchdog, for the latency step;
# jsonschema, jsonschema-specifications, referencing, rpds-py for the json step: `pip download` them for cp312);
# when the tree and the tarball exceed a call's 64 MiB: `split -b 33000000 -d .device/cute-dsl.tar.xz part`, put
# part00 in .devA/ and part01 in .devB/ (both git-ignored), carry .devA in one call and .devB in the next.
# Logs and JSON go under $OUT (or ./h200-out); the last lines printed are the summary tables.
set -uo pipefail
OUT=${OUT:-$PWD/h200-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
S=$PWD/.device/site
if [ -f .device/cute-dsl.tar.xz ] && [ ! -d "$S" ]; then mkdir -p "$S" && tar xJf .device/cute-dsl.tar.xz -C "$S"; fi
# The tree and the whole tarball no longer fit one call's 64 MiB: carry .devA (part00) in one call and .devB
# (part01) in the next, while the machine is warm; the halves meet in /tmp/ktui-cds.
C=/tmp/ktui-cds
[ -f .devA/part00 ] && mkdir -p $C && cp .devA/part00 $C/
if [ -f .devB/part01 ] && [ -f $C/part00 ] && [ ! -d $C/site ]; then
  mkdir -p $C/site && cat $C/part00 .devB/part01 | tar xJf - -C $C/site
fi
[ -d $C/site ] && S=$C/site
[ -d "$S" ] && export PYTHONPATH=$S:$S/nvidia_cutlass_dsl/dsl_packages:${PYTHONPATH:-}
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
  export PATH=/tmp/site/bin:$PATH
fi
export PYTHONPATH=$PWD:${PYTHONPATH:-}
# STEP_TIMEOUT=S: each pytest step is interrupted (SIGINT: pytest still prints its summary) after S seconds
T=(); [ -n "${STEP_TIMEOUT:-}" ] && T=(timeout -s INT "$STEP_TIMEOUT")

for step in "$@"; do
  case $step in
    info)
      nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$OUT/info.txt"
      python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/info.txt"
      python3 -c "import cutlass; print('cutlass dsl ok')" 2>&1 | tail -1 | tee -a "$OUT/info.txt" ;;
    examples)
      python3 benchmarks/examples_table.py --device cuda --out "$OUT/examples" 2>&1 | tee "$OUT/examples.log" ;;
    spy)  # where a GPU ladder's seconds go: py-spy over ktui and its workers (py-spy's wheel carried in .whl)
      for k in ${SPY_KERNELS:-vector_add/v2 softmax/v2}; do
        n=${k/\//_}
        spy=(); command -v py-spy >/dev/null && spy=(py-spy record --subprocesses --rate 40 --format raw -o "$OUT/spy_$n.txt" --)
        t0=$SECONDS
        "${spy[@]}" python3 -m ktui run kernels/$k.py --device cuda --json >"$OUT/run_$n.json" 2>"$OUT/run_$n.err"
        echo "$k: ktui run took $((SECONDS - t0)) s" 
        python3 - "$OUT/run_$n.json" "$k" <<'PY'
import json, sys
s = open(sys.argv[1]).read()  # py-spy writes its own lines to stdout around ktui's one object
e = json.JSONDecoder().raw_decode(s[s.index("{"):])[0]  # the envelope (docs/json.md): data, or error
d = e.get("data") or {"rungs": [{"name": "error", "status": e["error"]["kind"], "seconds": e["error"]["message"]}]}
print(sys.argv[2], " ".join(f"{r['name']}={r.get('status')}:{r.get('seconds', '?')}" for r in d["rungs"]))
PY
      done ;;
    latency)
      python3 benchmarks/loop_latency.py --device cuda --n 5 --skip-startup 2>&1 | tee "$OUT/latency.log" ;;
    tests)
      "${T[@]}" python3 -m pytest -q tests/test_gpu.py -p no:cacheprovider 2>&1 | tee "$OUT/gpu-tests.log" | tail -25 ;;
    cases)
      "${T[@]}" python3 -m pytest -q -rA tests/test_gpu_cases.py -p no:cacheprovider 2>&1 | tee "$OUT/gpu-cases.log" | tail -40 ;;
    gpu-cases)  # issue 9's GPU kinds: the timed-call checks, launches, side streams, TF32 (~8 min on 2026-12-03)
      "${T[@]}" python3 -m pytest -v -rA -m gpu tests/test_gpu_cases.py tests/test_gpu_launches.py -p no:cacheprovider \
        -k "not int32_overflow" --durations=10 2>&1 | tee "$OUT/gpu-cases.log" | grep -E "^(PASSED|FAILED|ERROR|SKIPPED)|passed|failed|slowest|s call" | tail -45 ;;
    gpu-rest)  # every example on every rung, faults, hangs, ncu, precision (~9.5 min on 2026-12-03)
      "${T[@]}" python3 -m pytest -v -rA -m gpu tests/test_gpu.py tests/test_cases_precision.py \
        -p no:cacheprovider --durations=10 2>&1 \
        | tee "$OUT/gpu-rest.log" | grep -E "^(PASSED|FAILED|ERROR|SKIPPED)|passed|failed|s call" | tail -45 ;;
    gpu-more)  # the other gpu-marked tests but the huge ones: integrity, fuzzed sizes, CuTeDSL, replay --rerun
      "${T[@]}" python3 -m pytest -v -rA -m gpu tests/test_integrity.py tests/test_cases_inputs.py tests/test_needs_gpu.py \
        tests/test_sessions_replay.py tests/test_crossing.py tests/test_call_paths.py tests/test_ladder.py \
        -p no:cacheprovider --durations=10 2>&1 \
        | tee "$OUT/gpu-more.log" | grep -E "^(PASSED|FAILED|ERROR|SKIPPED)|passed|failed|s call" | tail -45 ;;
    gpu-huge)  # more than 2**31 elements: int32 offsets, a 0-d bf16 sum, a huge stride-0 output (minutes each)
      "${T[@]}" python3 -m pytest -v -rA -m gpu tests/test_robustness.py tests/test_gpu_cases.py -k "int32_overflow or 2_31 or stride0" \
        -p no:cacheprovider --durations=10 2>&1 \
        | tee "$OUT/gpu-huge.log" | grep -E "^(PASSED|FAILED|ERROR|SKIPPED)|passed|failed|s call" | tail -45 ;;
    profile)  # ktui's sections + the source page (SourceCounters): the hottest Python line; source.csv kept as a fixture
      for k in vector_add/v1 vector_add/v2 vector_add/v3 softmax/v1 softmax/v2 matmul/v1 matmul/v2; do
        python3 -m ktui run kernels/$k.py --device cuda --rungs dumps,profile --json --no-record > "$OUT/profile_${k/\//_}.json" 2>"$OUT/profile_${k/\//_}.err"
        cp .ktui/profiles/${k%/*}/${k#*/}-*.source.csv "$OUT/profile_${k/\//_}.source.csv" 2>/dev/null
        python3 - "$OUT/profile_${k/\//_}.json" "$k" <<'PY'
import json, sys
s = open(sys.argv[1]).read()  # py-spy writes its own lines to stdout around ktui's one object
e = json.JSONDecoder().raw_decode(s[s.index("{"):])[0]  # the envelope (docs/json.md): data, or error
if "error" in e:
    print(f"| {sys.argv[2]} | {e['error']['kind']} | {e['error']['message']} | |")
    raise SystemExit(0)
r = {x["name"]: x for x in e["data"]["rungs"]}
p, dm = r.get("profile", {}), r.get("dumps", {})
hot = [(k["kernel"], k["matched"], (k["hot_lines"] or [{}])[0]) for k in (p.get("source") or {}).get("kernels", [])]
top = "; ".join(f"{n}: {'line %s %.0f%% %s' % (h.get('line'), h.get('pct', 0), h.get('stalls', [[]])[:1]) if m else 'not matched'}" for n, m, h in hot)
print(f"| {sys.argv[2]} | {p.get('status')} | {p.get('summary', '')} | {top} | {dm.get('summary', '')} |")
PY
      done ;;
    json)  # the --json envelopes of GPU runs (benchmark and profile figures: the CPU never makes them) against
      # their schemas (`ktui schema run`, docs/json.md); one line a run, "valid" or the first violation
      for k in ${JSON_KERNELS:-vector_add/v2 softmax/v2 matmul/v2}; do
        n=${k/\//_}
        python3 -m ktui run kernels/$k.py --device cuda --rungs benchmark,dumps,profile --json >"$OUT/json_$n.json" 2>"$OUT/json_$n.err"
        echo "exit $?" >>"$OUT/json_$n.err"
        python3 - "$OUT/json_$n.json" "$k" <<'PY'
import json, sys
try:
    import jsonschema
    from jsonschema.exceptions import best_match
except ImportError:
    raise SystemExit(f"| {sys.argv[2]} | jsonschema is not installed: carry its wheels in .whl (see the header) |")
from ktui.schemas import command_schema
e = json.load(open(sys.argv[1]))
err = best_match(jsonschema.Draft202012Validator(command_schema("run")).iter_errors(e))
what = "valid" if err is None else f"INVALID: {err.message} at {list(err.absolute_path)}"
d = e.get("data") or {}
rungs = " ".join(f"{r['name']}:{r['status']}" for r in d.get("rungs", [])) or e.get("error", {}).get("message", "")
print(f"| {sys.argv[2]} | exit {e.get('exit_code')} | {what} | {rungs} |")
PY
      done ;;
    trace)  # the gpu-marked trace tests, then every example traced (ktui's markers, and Proton's on the Triton ones)
      python3 -m pytest -v -rA -m gpu tests/test_gpu_trace.py -p no:cacheprovider --durations=5 2>&1 \
        | tee "$OUT/trace-tests.log" | grep -E "^(PASSED|FAILED|ERROR|SKIPPED)|passed|failed|Error" | tail -20
      python3 benchmarks/trace_examples.py --proton --out "$OUT/trace" 2>&1 | tee "$OUT/trace.log" | tail -40 ;;
    variants)
      python3 benchmarks/example_variants.py 2>&1 | tee "$OUT/variants.log" ;;
    round10a)  # the round 10 red team's bad kernels fail and their twins pass on the GPU, 2 seeds (16 runs)
      python3 benchmarks/round10_table.py --device cuda --seeds 11,12 --only powi,vadd,chunk --out "$OUT/round10a" \
        2>&1 | tee "$OUT/round10a.log" | tail -22 ;;
    round10b)  # top-k with ties, and honest bf16/fp16 examples under the gross bound (gross_ratio < 1), 2 seeds (12)
      python3 benchmarks/round10_table.py --device cuda --seeds 11,12 --only topk,softmax,matmul,rowsum16 \
        --out "$OUT/round10b" 2>&1 | tee "$OUT/round10b.log" | tail -18 ;;
    *) echo "unknown step $step" ;;
  esac
done

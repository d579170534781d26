#!/usr/bin/env bash
# Runs ktui's GPU checks on the lent H200 (the device tool), from the repository root:
#   bash benchmarks/h200.sh STEP...      steps: info spy examples latency tests cases gpu-cases gpu-rest profile variants
#                                        issue9-open
# Each step fits one 10-minute call only on a fast run: on the 2026-12-01 H200 run gpu-cases alone took over 570 s.
# Carry `.device` (CuTeDSL, made by ../shared/device/pack-cute-dsl) and `.whl` (watchdog, for the latency step);
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
        /usr/bin/time -v py-spy record --subprocesses --rate 40 --format raw -o "$OUT/spy_$n.txt" -- \
          python3 -m ktui run kernels/$k.py --device cuda --json >"$OUT/run_$n.json" 2>"$OUT/run_$n.err"
        python3 - "$OUT/run_$n.json" "$k" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(sys.argv[2], " ".join(f"{r['name']}={r.get('status')}:{r.get('duration_s', r.get('seconds', '?'))}" for r in d["rungs"]))
PY
      done ;;
    latency)
      python3 benchmarks/loop_latency.py --device cuda --n 5 --skip-startup 2>&1 | tee "$OUT/latency.log" ;;
    tests)
      python3 -m pytest -q tests/test_gpu.py -p no:cacheprovider 2>&1 | tee "$OUT/gpu-tests.log" | tail -25 ;;
    cases)
      python3 -m pytest -q -rA tests/test_gpu_cases.py -p no:cacheprovider 2>&1 | tee "$OUT/gpu-cases.log" | tail -40 ;;
    gpu-cases)  # issue 9's GPU kinds: the timed-call checks, launches, side streams, TF32, overflow
      python3 -m pytest -v -rA -m gpu tests/test_gpu_cases.py tests/test_gpu_launches.py -p no:cacheprovider \
        --durations=10 2>&1 | tee "$OUT/gpu-cases.log" | grep -E "^(PASSED|FAILED|ERROR|SKIPPED)|passed|failed|slowest|s call" | tail -45 ;;
    gpu-rest)  # every other test marked gpu (precision, robustness, integrity, crossing, inputs, test_gpu.py)
      python3 -m pytest -v -rA -m gpu tests/test_gpu.py tests/test_cases_precision.py tests/test_robustness.py \
        tests/test_integrity.py tests/test_cases_inputs.py tests/test_needs_gpu.py $(ls tests/test_crossing.py tests/test_call_paths.py 2>/dev/null) \
        -p no:cacheprovider --durations=10 2>&1 \
        | tee "$OUT/gpu-rest.log" | grep -E "^(PASSED|FAILED|ERROR|SKIPPED)|passed|failed|s call" | tail -45 ;;
    profile)
      for k in vector_add/v1 vector_add/v2 vector_add/v3 softmax/v1 softmax/v2 matmul/v1 matmul/v2; do
        python3 -m ktui run kernels/$k.py --device cuda --rungs dumps,profile --json > "$OUT/profile_${k/\//_}.json" 2>"$OUT/profile_${k/\//_}.err"
        python3 - "$OUT/profile_${k/\//_}.json" "$k" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = {x["name"]: x for x in d["rungs"]}
p, dm = r.get("profile", {}), r.get("dumps", {})
print(f"| {sys.argv[2]} | {p.get('status')} | {p.get('summary', '')} | {dm.get('summary', '')} |")
PY
      done ;;
    variants)
      python3 benchmarks/example_variants.py 2>&1 | tee "$OUT/variants.log" ;;
    issue9-open)  # the last red team's open findings on the GPU: the buffer rule on timed calls, and the new twins
      # timed (their timed calls' outputs checked by the judge's full verdict: integer rounding allowance, in-place
      # inputs, complex pairs). Expect: the pytest PASSED, then every "good" row ok with its benchmark ok, every "bad"
      # row FAILED at correctness (or benchmark for buffer_bench_fresh_bad).
      python3 -m pytest -v -rA -m gpu tests/test_gpu_cases.py -k fresh_tensor_for_the_declared_buffer \
        -p no:cacheprovider 2>&1 | tee "$OUT/issue9-open.log" | grep -E "^(PASSED|FAILED|ERROR)|passed|failed"
      W=$(mktemp -d) && mkdir -p "$W/references" "$W/kernels"
      for pk in add_into_buffer_bench:buffer_filled_good add_into_buffer_bench:buffer_bench_fresh_bad \
          quant_i8:quant_i8_good quant_i8:quant_i8_fp32_good quant_i8:quant_i8_floor_tail_bad quant16:quant16_reciprocal_good \
          add_inplace:inplace_add_good add_inplace:inplace_add_fresh_bad cmul_wide:cmul_gauss_good cmul_wide:cmul_gauss_bf16_bad; do
        p=${pk%%:*}; k=${pk##*:}
        cp tests/cases/references/$p.py "$W/references/$p.py" && mkdir -p "$W/kernels/$p" && cp tests/cases/kernels/$k.py "$W/kernels/$p/$k.py"
        (cd "$W" && python3 -m ktui run kernels/$p/$k.py --device cuda --seed 3 --json --no-record) > "$OUT/i9_$k.json" 2>"$OUT/i9_$k.err"
        python3 - "$OUT/i9_$k.json" "$p/$k" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"| {sys.argv[2]} | no result ({type(e).__name__}) |"); sys.exit()
r = {x["name"]: x for x in d["rungs"]}
cell = lambda n: f"{r.get(n, {}).get('status', '-')}: {(r.get(n, {}).get('summary') or '')[:110]}"
print(f"| {sys.argv[2]} | {cell('correctness')} | {cell('benchmark')} |")
PY
      done ;;
    *) echo "unknown step $step" ;;
  esac
done

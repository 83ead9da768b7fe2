#!/usr/bin/env bash
# ppo_atari.py on a GPU, in one go: the speed of 100k steps of Breakout, and a run that repeats and resumes exactly
# with deterministic GPU math (--torch-deterministic, the default). Exits 0 when every check passes; otherwise the
# first failed check's line on stderr and exit 1 (exit 2: no GPU, or bad settings).
#
#   bash benchmark/gpu_check.sh                                    # on a machine with an NVIDIA GPU
#   GPU_CHECK_DEVICE=cpu GPU_CHECK_STEPS=2048 bash benchmark/gpu_check.sh   # the same checks on the CPU
#
# Settings (environment variables): GPU_CHECK_DEVICE cuda|cpu (cuda), GPU_CHECK_STEPS (100000), GPU_CHECK_FLAGS
# (extra flags for every run, e.g. "--env-threads 8" on a many-core GPU machine), PYTHON (python).
#
# Resume cannot be compared with an uninterrupted run: ale-py's vector env cannot save its emulators, so a resumed run
# starts new games. What must continue exactly is the learner: a run resumed from its iteration-2 checkpoint must reach
# iteration 3 with the same CPU and CUDA RNG states as the run that never stopped (the CUDA RNG draws the minibatch
# shuffles on the GPU), and two resumes from one checkpoint, like two fresh runs with one seed, must give the same
# weights and games, bit for bit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PYTHON:-python}
DEVICE=${GPU_CHECK_DEVICE:-cuda}
STEPS=${GPU_CHECK_STEPS:-100000}
read -r -a EXTRA <<< "${GPU_CHECK_FLAGS:-}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

fail() { echo "gpu_check: FAIL: $*" >&2; exit 1; }
case "$DEVICE" in
  cuda) DEVICE_FLAG=--cuda ;;
  cpu) DEVICE_FLAG=--no-cuda ;;
  *) echo "gpu_check: error: GPU_CHECK_DEVICE must be cuda or cpu, got '$DEVICE'" >&2; exit 2 ;;
esac
if ! [[ "$STEPS" =~ ^[0-9]+$ && "$STEPS" -ge 1024 ]]; then
  echo "gpu_check: error: GPU_CHECK_STEPS must be a number >= 1024, got '$STEPS'" >&2; exit 2
fi

if [ "$DEVICE" = cuda ] && ! "$PY" -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
  version=$("$PY" -c "import torch; print(torch.__version__, 'CUDA', torch.version.cuda)")
  echo "gpu_check: no GPU: torch $version sees no CUDA device. On a GPU machine, install torch 2.13.0's CUDA build:" \
       "pip install --force-reinstall torch==2.13.0 --index-url https://pypi.org/simple" \
       "(README, Atari). GPU_CHECK_DEVICE=cpu runs the same checks on the CPU." >&2
  exit 2
fi

# A training run of ppo_atari.py in folder $1 with flags $2...; each checkpoint it writes is also kept as
# checkpoint-{iteration}.pt, so that a run can be resumed from an earlier iteration than its last.
train() {
  local dir=$1; shift
  mkdir -p "$dir"
  (cd "$dir" && "$PY" - "$ROOT/ppo_atari.py" "$@" <<'EOF'
import os, runpy, shutil, sys
import torch
script, replace = sys.argv[1], os.replace
def replace_and_keep(src, dst):
    replace(src, dst)
    if os.path.basename(dst) == "checkpoint.pt":
        iteration = torch.load(dst, weights_only=True, map_location="cpu")["iteration"]
        shutil.copy(dst, os.path.join(os.path.dirname(dst), f"checkpoint-{iteration}.pt"))
os.replace = replace_and_keep
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(script))
runpy.run_path(script, run_name="__main__")
EOF
  ) > "$dir/log.txt" 2>&1 || { cat "$dir/log.txt" >&2; fail "the run in $dir exited non-zero"; }
}

# 1. Speed: STEPS steps of Breakout with Table 5's settings; the first line must name the device
train "$WORK/speed" --env-id BreakoutNoFrameskip-v4 --total-timesteps "$STEPS" "$DEVICE_FLAG" ${EXTRA[@]+"${EXTRA[@]}"}
head -1 "$WORK/speed/log.txt" | grep -q "^device: $DEVICE" || fail "first line is not 'device: $DEVICE...'"
echo "gpu_check: $(head -1 "$WORK/speed/log.txt")"
echo "gpu_check: speed: $(grep '^done:' "$WORK/speed/log.txt")"

# 2. Determinism and resume, 3 iterations of 8 x 128 steps with a checkpoint after each
FLAGS=(--env-id BreakoutNoFrameskip-v4 --total-timesteps 3072 --save-model --save-interval 1 --torch-deterministic
       "$DEVICE_FLAG" ${EXTRA[@]+"${EXTRA[@]}"})
train "$WORK/fresh1" "${FLAGS[@]}"
train "$WORK/fresh2" "${FLAGS[@]}"
for name in resume1 resume2; do
  mkdir -p "$WORK/$name"
  cp "$WORK"/fresh1/runs/*/checkpoint-2.pt "$WORK/$name/checkpoint.pt"
  cp "$WORK"/fresh1/runs/*/episodes.csv "$WORK/$name/episodes.csv"
  train "$WORK/$name" --resume "$WORK/$name/checkpoint.pt"
done
"$PY" - "$WORK" "$DEVICE" <<'EOF' || exit 1
import glob, os, sys
import torch
work, device = sys.argv[1], sys.argv[2]
load = lambda path: torch.load(path, weights_only=True, map_location="cpu")
fresh1, fresh2 = (load(glob.glob(f"{work}/{name}/runs/*/checkpoint-3.pt")[0]) for name in ("fresh1", "fresh2"))
resume1, resume2 = (load(f"{work}/{name}/checkpoint-3.pt") for name in ("resume1", "resume2"))
csv = lambda path: open(path).read()
failures = []
def check(ok, what):
    print(f"gpu_check: {'ok  ' if ok else 'FAIL'} {what}", file=sys.stdout if ok else sys.stderr)
    ok or failures.append(what)
same = lambda a, b: all(torch.equal(a["agent"][k], b["agent"][k]) for k in a["agent"])
check(same(fresh1, fresh2), "two fresh runs with one seed end with the same weights, bit for bit")
games = [csv(glob.glob(f"{work}/{name}/runs/*/episodes.csv")[0]) for name in ("fresh1", "fresh2")]
check(games[0] == games[1], "two fresh runs with one seed play the same games")
check(("cuda_rng" in fresh1) == (device == "cuda"), "the checkpoint holds the CUDA RNG state exactly when on a GPU")
for rng in ("torch_rng", "cuda_rng") if device == "cuda" else ("torch_rng",):
    check(torch.equal(resume1[rng], fresh1[rng]),
          f"resumed at iteration 2: {rng} at iteration 3 is the unstopped run's")
check(same(resume1, resume2), "two resumes from one checkpoint end with the same weights, bit for bit")
check(csv(f"{work}/resume1/episodes.csv") == csv(f"{work}/resume2/episodes.csv"), "two resumes play the same games")
sys.exit(1 if failures else 0)
EOF
echo "gpu_check: all checks passed on $DEVICE"

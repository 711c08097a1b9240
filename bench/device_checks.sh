#!/bin/bash
# bench/device_checks.sh: what a session runs on a lent GPU machine (one
# H100 or H200, 16 quiet CPU cores), in one call, so that device time is
# spent measuring: the GPU's operator profile and GEMM curves
# (`simbatch calibrate --device=gpu`), the CUDA live runtime against the
# simulator (`scripts/fidelity --device=gpu`), and the CPU live runtime
# against the simulator on quiet cores (`scripts/fidelity`).
#
# usage: bench/device_checks.sh BINDIR OUTDIR [--cpu-fidelity-s=S] [--steps=LIST]
#   BINDIR  a build holding simbatch, calib-cpu, calib-cuda, calib-cuda-ops
#           and libsimbatch-live-cuda.so (meson with nvcc and cuBLAS found)
#   OUTDIR  where everything lands: OUTDIR/device-checks.tar.gz (every file
#           below), OUTDIR/log.txt, and the tables (*.csv) as each step ends
#   LIST    the steps to run, comma-separated (default all): ops-7b, ops-70b,
#           gemm, fidelity-gpu, fidelity-cpu
# The GPU steps run one after another on CPU cores 0-3; the CPU fidelity
# runs beside them on cores 8-15 (on a machine of fewer than 16 cores, both
# on all of them), cut at --cpu-fidelity-s seconds (its
# finished points are kept). Each step is bounded by `timeout`, and a step
# that fails is logged and the next one runs.
#
# Files (in the archive):
#   env.txt                      nvidia-smi, CPU, kernel, library versions
#   ops-h100-llama2-7b.csv       Llama-2-7B's operators at Vidur's token grid
#   ops-h100-llama2-70b.csv      Llama-2-70B's at calib-cuda-ops's default grid
#   gpu-h100.csv                 node-level GEMM and cell curves (calib-cuda)
#   fidelity-gpu.out / .csv      LSTM live on the GPU against the simulator
#   fidelity-cpu.txt / points.csv  LSTM live on the CPU against the simulator
#   *.log                        each step's stderr
set -u
BIN=$(cd "${1:?usage: bench/device_checks.sh BINDIR OUTDIR}" && pwd)
OUT=${2:?usage: bench/device_checks.sh BINDIR OUTDIR}
CPU_FID_S=240
STEPS=ops-7b,ops-70b,gemm,fidelity-gpu,fidelity-cpu
for arg in "${@:3}"; do
	case $arg in
	--cpu-fidelity-s=*) CPU_FID_S=${arg#*=} ;;
	--steps=*) STEPS=${arg#*=} ;;
	*) echo "device_checks: unknown argument '$arg'" >&2; exit 2 ;;
	esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
W=$(mktemp -d /tmp/device-checks.XXXXXX)
SB="$BIN/simbatch"
# cores: the GPU steps' and the CPU fidelity's apart where there are 16 or more
if [ "$(nproc)" -ge 16 ]; then GPU_CORES=0-3 CPU_CORES=8-15; else GPU_CORES=0-$(($(nproc) - 1)) CPU_CORES=$GPU_CORES; fi
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$OUT/log.txt"; }
wanted() { case ",$STEPS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
step() {   # step NAME SECONDS CORES CMD...: one bounded step, its stdout to NAME.out, stderr to NAME.log
	local name=$1 secs=$2 cores=$3
	shift 3
	wanted "$name" || return 0
	log "start $name (at most ${secs}s, cores $cores)"
	local t0=$SECONDS
	taskset -c "$cores" timeout "$secs" "$@" >"$W/$name.out" 2>"$W/$name.log"
	local rc=$?
	log "end $name: exit $rc after $((SECONDS - t0))s; $(tail -n 1 "$W/$name.log")"
	cp "$W"/*.csv "$OUT"/ 2>/dev/null   # the tables so far, should a later step outlast the call
	return $rc
}

{
	date -u
	nvidia-smi
	nvidia-smi -q -d CLOCK,POWER,PERFORMANCE
	nproc
	lscpu
	uname -a
	head -3 /etc/os-release
	ldd "$SB" "$BIN/calib-cuda-ops"
} >"$W/env.txt" 2>&1

# Vidur's H100 token grid (calib/tables/ops-h100.csv): 1, 2, 4, 8, then
# steps of 8 to 1,024, of 16 to 2,048 and of 32 to 4,096.
GRID="1,2,4,8,$(seq -s, 16 8 1024),$(seq -s, 1040 16 2048),$(seq -s, 2080 32 4096)"

# The CPU fidelity beside the GPU steps, on cores of its own.
wanted fidelity-cpu && (
	cd "$W" && taskset -c "$CPU_CORES" timeout "$CPU_FID_S" python3 "$ROOT/scripts/fidelity" --model=lstm \
		--simbatch="$SB" --policies=serial,graph,cellular,lazy --loads=0.3,0.6,0.85 --requests=200 \
		--live-repeats=2 --work="$W/fid-cpu" --csv="$W/fidelity-cpu.csv" >"$W/fidelity-cpu.txt" \
		2>"$W/fidelity-cpu.log"
	echo "exit $?" >>"$W/fidelity-cpu.log"
) &

step ops-7b 120 "$GPU_CORES" "$SB" calibrate --device=gpu --ops --model=llama2-7b --tokens="$GRID" --name=h100 \
	--out="$W/ops-h100-llama2-7b.csv"
step ops-70b 40 "$GPU_CORES" "$SB" calibrate --device=gpu --ops --model=llama2-70b --name=h100 \
	--out="$W/ops-h100-llama2-70b.csv"
step gemm 60 "$GPU_CORES" "$SB" calibrate --device=gpu --name=h100 --out="$W/gpu-h100.csv" --no-db
step fidelity-gpu 150 "$GPU_CORES" python3 "$ROOT/scripts/fidelity" --device=gpu --model=lstm --simbatch="$SB" \
	--policies=serial,graph,cellular,lazy --loads=0.3,0.6,0.85 --requests=2000 --live-repeats=2 \
	--work="$W/fid-gpu" --csv="$W/fidelity-gpu.csv"

if wanted fidelity-cpu; then
	log "waiting for the CPU fidelity"
	wait
	log "CPU fidelity: $(tail -n 2 "$W/fidelity-cpu.log" | tr '\n' ' ')"
fi
cp "$W/fid-cpu/points.csv" "$W/fidelity-cpu-points.csv" 2>/dev/null
cp "$W/fid-gpu/points.csv" "$W/fidelity-gpu-points.csv" 2>/dev/null
tar -C "$W" -czf "$OUT/device-checks.tar.gz" --exclude='fid-*/*-t[0-9].csv' .
cat "$W/fidelity-gpu.out" "$W/fidelity-cpu.txt" 2>/dev/null
log "done: $OUT/device-checks.tar.gz ($(du -h "$OUT/device-checks.tar.gz" | cut -f1))"

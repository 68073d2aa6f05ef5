#!/usr/bin/env bash
# scripts/profile-vs-nsys.sh - the profiler's kernel durations against Nsight Systems', on the
# GPU machine with the bundle carried (.gpu, from ../shared/gpu/bundle.sh), as in
# docs/PERFORMANCE.md ("The profiler against Nsight Systems"). Each workload runs three times:
# `cudrv profile ... --json` with CUPTI's records, with CUDRV_PROFILE_TIMING=events, and under
# `nsys profile -t cuda`; Nsight Systems' kernel rows (exported to SQLite) are paired with that
# process's profiled launches in launch order, and the script prints the means per operation.
#
# Usage: scripts/profile-vs-nsys.sh
# Environment: NSYS (default: the nsys inside Nsight Compute under /opt/nvidia, else the one on
# PATH); NSYS_LIBS, a folder put on LD_LIBRARY_PATH for nsys (its importer needs libdw.so.1,
# which the GPU machine lacks: copy libdw.so.1, libelf.so.1 and libbz2.so.1.0 there); OUT, where
# the runs' files go (default /tmp/cudrv-nsys).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/.gpu/run.sh" path > /dev/null || exit 2
b=/tmp/cudrv-gpu/b
cudrv="$b/bin/$(awk -F'\t' '$1 == "bin" && $2 == "cudrv" {print $3; exit}' "$b/manifest.tsv")"
nsys=${NSYS:-$(ls /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys 2>/dev/null | tail -n 1)}
[ -n "$nsys" ] || nsys=$(command -v nsys) || { echo "no nsys found (set NSYS)"; exit 2; }
out=${OUT:-/tmp/cudrv-nsys}
mkdir -p "$out"
libs=${NSYS_LIBS:+$NSYS_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}
x=$root/tests/data/tune_fixtures.ptx
workloads=(
  "profile --runs 10 --warmup 0 --json"
  "profile --ptx $x --kernel tune_stencil --grid 4096 --block 256 --smem 1280 --arg buf:f32:1048576 --arg buf:f32:1048576 --arg u64:1048576 --runs 20 --warmup 3 --json"
  "profile --ptx $x --kernel tune_stencil --grid 65536 --block 256 --smem 1280 --arg buf:f32:16777216 --arg buf:f32:16777216 --arg u64:16777216 --runs 20 --warmup 3 --json"
  "profile --ptx $x --kernel tune_block_sum --grid 32768 --block 512 --arg buf:f32:16777216 --arg zeros:f32:1 --arg u64:16777216 --runs 20 --warmup 3 --json"
  "profile --ptx $x --kernel tune_poly --grid 1056 --block 256 --arg buf:f32:4194304 --arg buf:f32:4194304 --arg u64:4194304 --runs 20 --warmup 3 --json"
)
i=0
for w in "${workloads[@]}"; do
  i=$((i + 1))
  # shellcheck disable=SC2086
  "$cudrv" $w > "$out/w${i}_cupti.json" || { echo "workload $i failed"; exit 1; }
  # shellcheck disable=SC2086
  CUDRV_PROFILE_TIMING=events "$cudrv" $w > "$out/w${i}_events.json" || exit 1
  rm -f "$out/w$i.nsys-rep" "$out/w$i.sqlite"
  # shellcheck disable=SC2086
  LD_LIBRARY_PATH=$libs "$nsys" profile -t cuda -s none --cpuctxsw=none -o "$out/w$i" -f true \
    "$cudrv" $w > "$out/w${i}_nsys.json" 2> "$out/w${i}_nsys.err" || { tail -3 "$out/w${i}_nsys.err"; exit 1; }
  LD_LIBRARY_PATH=$libs "$nsys" export --type sqlite -o "$out/w$i.sqlite" "$out/w$i.nsys-rep" > /dev/null 2> "$out/w${i}_export.err" ||
    { echo "no report from nsys (its importer: see NSYS_LIBS)"; exit 1; }
done
python3 - "$out" "$i" <<'PY'
import collections, json, sqlite3, sys
out, n = sys.argv[1], int(sys.argv[2])
def load(path):
    text = open(path).read()  # nsys adds its own lines after the JSON
    return json.JSONDecoder().raw_decode(text[text.index('{'):])[0]
def by_name(samples):
    m = collections.defaultdict(list)
    for s in samples:
        m[s[0]].append(s[1])
    return m
mean = lambda v: sum(v) / len(v)
rows = []
for w in range(1, n + 1):
    runs = {t: sorted(load(f"{out}/w{w}_{t}.json")["samples"], key=lambda s: s["start_us"]) for t in ("cupti", "events", "nsys")}
    db = sqlite3.connect(f"{out}/w{w}.sqlite")
    kernels = list(db.execute("select s.value, k.end - k.start from CUPTI_ACTIVITY_KIND_KERNEL k "
                              "join StringIds s on s.id = k.shortName order by k.start"))
    profiled = runs["nsys"]
    kernels = kernels[len(kernels) - len(profiled):]  # warm-up launches come first
    for s, (name, _) in zip(profiled, kernels):
        if s["name"] != name and not s["name"].endswith("/ " + name):
            sys.exit(f"workload {w}: launch {s['name']!r} paired with nsys's {name!r}")
    ns = by_name([(s["name"], d / 1000.0) for s, (_, d) in zip(profiled, kernels)])
    cu = by_name([(s["name"], s["duration_us"]) for s in runs["cupti"]])
    ev = by_name([(s["name"], s["duration_us"]) for s in runs["events"]])
    rows += [(mean(ns[k]), k, mean(cu[k]), mean(ev[k])) for k in ns]
print(f"{'operation / kernel':60} {'CUPTI':>9} {'events':>9} {'nsys':>9} {'CUPTI/nsys':>10} {'events/nsys':>11}")
for n_us, k, c, e in sorted(rows):
    print(f"{k[:60]:60} {c:9.2f} {e:9.2f} {n_us:9.2f} {c / n_us:10.3f} {e / n_us:11.3f}")
PY

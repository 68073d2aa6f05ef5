#!/bin/bash
# Builds the compat suite and the migration example under both features, and the launch bench,
# in release, and gathers them with run.sh into .gpu-compat/ at the repository root (ignored by
# git) for a GPU machine without Rust:
#   bash compat/gpu/bundle.sh            # here
#   bash .gpu-compat/run.sh [all|suite|bench]   # there (prints checksums of both features)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
out="$root/.gpu-compat"
mkdir -p "$out"
exe() {
  python3 -c "
import json, sys
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get('reason') == 'compiler-artifact' and m.get('executable'): print(m['executable'])"
}
for feat in default legacy; do
  flags=""
  [ "$feat" = legacy ] && flags="--features legacy"
  cp "$(cargo test -p cudrv-compat --release $flags --test suite --no-run --message-format=json | exe)" "$out/suite-$feat"
  cp "$(cargo build -p cudrv-compat --release $flags --example migrate --message-format=json | exe)" "$out/migrate-$feat"
done
cp "$(cargo bench -p cudrv-compat --bench launch --no-run --message-format=json | exe)" "$out/launch-default"
cp compat/gpu/run.sh "$out/run.sh"
ls -la "$out"

#!/usr/bin/env bash
# The bundled local iris controller (CoreWeave's scheduler, local backend), for scripts/demo.sh:
# the REAL marin-iris controller from .venv-iris on 127.0.0.1:${SWEEP_IRIS_PORT:-22310}, HOME and
# state under ${SWEEP_IRIS_DIR:-/var/tmp/sweep-local-iris}. It is started through
# tests/iris_test_controller.py, a WRAPPER THAT DISABLES ONE CHECK, the controller's client-freshness
# check (marin-iris 0.2.20, the newest for Python 3.11, refuses job submissions from a client built
# more than 14 days ago); the sweep itself only reads. A restart starts with no jobs (iris keeps no
# state here). Usage: scripts/local_iris.sh up|down     (after `source scripts/env.sh`)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${SWEEP_IRIS_DIR:-/var/tmp/sweep-local-iris}
PORT=${SWEEP_IRIS_PORT:-22310}
URL=http://127.0.0.1:$PORT
IPY=${SWEEP_IRIS_PYTHON:?source scripts/env.sh first}
healthy() { "$IPY" -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1] + '/health', timeout=2)" "$URL" 2>/dev/null; }
case "${1:-up}" in
  up)
    if healthy; then echo "[local-iris] up: $URL (already)"; exit 0; fi
    mkdir -p "$DIR/tmp"
    cfg=$("$IPY" -c "import iris, os; print(os.path.join(os.path.dirname(iris.__file__), 'config', 'local.yaml'))")
    sed -E "s/^([[:space:]]*)port:[[:space:]]*[0-9]+/\1port: $PORT/" "$cfg" >"$DIR/local.yaml"
    HOME=$DIR TMPDIR=$DIR/tmp setsid "$IPY" tests/iris_test_controller.py --config "$DIR/local.yaml" cluster start \
      >"$DIR/ctl.log" 2>&1 </dev/null &
    echo $! >"$DIR/controller.pid"
    for _ in $(seq 1 120); do
      if healthy; then echo "[local-iris] up: $URL (pid $(cat "$DIR/controller.pid"), log $DIR/ctl.log)"; exit 0; fi
      kill -0 "$(cat "$DIR/controller.pid")" 2>/dev/null || break
      sleep 0.5
    done
    echo "[local-iris] ERROR: the controller did not come up:" >&2
    tail -n 30 "$DIR/ctl.log" >&2
    exit 1
    ;;
  down)
    if [ -f "$DIR/controller.pid" ]; then
      kill -TERM -- "-$(cat "$DIR/controller.pid")" 2>/dev/null || true
      rm -f "$DIR/controller.pid"
    fi
    echo "[local-iris] down"
    ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac

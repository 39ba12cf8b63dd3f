#!/bin/bash
# Authentication at full speed: GET of one document through a release `cbl serve`, measured with
# wrk (-t2 -c32) in three ways, in paired rounds (the order rotates each round), medians printed:
#   none    the listener without admins (no credentials are checked)
#   basic   HTTP Basic as a `_users` user whose password is hashed with CouchDB 3.4's defaults
#           (PBKDF2-SHA256, 600000 iterations), member of the database by its `_security`
#   cookie  the same user's AuthSession cookie from POST /_session
# Budget (issue 33): basic and cookie each >= 90% of none's requests/s, p99 < 10 ms.
#
# Usage: Benchmarks/listener-auth.sh [ROUNDS] [SECONDS]   (needs wrk and curl; builds cbl -c release)
set -euo pipefail
ROUNDS=${1:-5}
SECONDS_PER_RUN=${2:-8}
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "wrk is not installed (apt install wrk)" >&2; exit 2; }
swift build -c release --product cbl >/dev/null
CBL=$(swift build -c release --show-bin-path)/cbl
OUT=$(mktemp)
PORT=15950
BODY='{"name":"Customer 1","city":"Springfield","tags":["a","b"],"n":42}'

serve() {   # serve DIR [credentials...]; waits until it answers
  local dir=$1; shift
  "$CBL" serve --directory "$dir" --port $PORT "$@" >"$dir/log" 2>&1 &
  SERVER=$!
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && return; sleep 0.1; done
  echo "cbl serve did not start" >&2; exit 1
}

measure() {   # measure MODE ROUND
  local mode=$1 round=$2 dir headers=()
  dir=$(mktemp -d)
  local url="http://127.0.0.1:$PORT"
  if [ "$mode" = none ]; then
    serve "$dir"
    curl -s -X PUT "$url/db" >/dev/null
    curl -s -X PUT "$url/db/doc" -H 'Content-Type: application/json' -d "$BODY" >/dev/null
  else
    serve "$dir" --credentials adm:pass
    curl -s -u adm:pass -X PUT "$url/_users" >/dev/null
    curl -s -u adm:pass -X PUT "$url/_users/org.couchdb.user:bob" -H 'Content-Type: application/json' \
      -d '{"name":"bob","password":"s3cret","roles":[],"type":"user"}' >/dev/null
    curl -s -u adm:pass -X PUT "$url/db" >/dev/null
    curl -s -u adm:pass -X PUT "$url/db/_security" -H 'Content-Type: application/json' \
      -d '{"members":{"names":["bob"]}}' >/dev/null
    curl -s -u adm:pass -X PUT "$url/db/doc" -H 'Content-Type: application/json' -d "$BODY" >/dev/null
    if [ "$mode" = basic ]; then
      headers=(-H "Authorization: Basic $(printf 'bob:s3cret' | base64)")
    else
      local cookie
      cookie=$(curl -s -D - -o /dev/null -X POST "$url/_session" -H 'Content-Type: application/json' \
        -d '{"name":"bob","password":"s3cret"}' | sed -n 's/^[Ss]et-[Cc]ookie: \(AuthSession=[^;]*\).*/\1/p')
      headers=(-H "Cookie: $cookie")
    fi
  fi
  local status
  status=$(curl -s -o /dev/null -w '%{http_code}' "${headers[@]}" "$url/db/doc")
  [ "$status" = 200 ] || { echo "$mode: GET /db/doc answered $status" >&2; exit 1; }
  wrk -t2 -c32 -d"${SECONDS_PER_RUN}s" --latency "${headers[@]}" "$url/db/doc" >"$dir/wrk" 2>&1
  local rps p99
  rps=$(awk '/Requests\/sec/ {print $2}' "$dir/wrk")
  p99=$(awk '$1 == "99%" {print $2}' "$dir/wrk")
  echo "$mode $round $rps $p99" >>"$OUT"
  kill "$SERVER"; wait "$SERVER" 2>/dev/null || true
  rm -rf "$dir"
}

MODES=(none basic cookie)
for round in $(seq "$ROUNDS"); do
  for i in 0 1 2; do measure "${MODES[$(( (i + round) % 3 ))]}" "$round"; done
done

python3 - "$OUT" <<'EOF'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
def ms(text):
    units = {"us": 0.001, "ms": 1.0, "s": 1000.0}
    for unit in ("us", "ms", "s"):
        if text.endswith(unit): return float(text[:-len(unit)]) * units[unit]
    return float(text)
by = {}
for mode, round_, rps, p99 in rows:
    by.setdefault(mode, []).append((int(round_), float(rps), ms(p99)))
none = {r: rps for r, rps, _ in by["none"]}
print("mode    req/s (median)  ratio to none (median of paired rounds)  p99 ms (median, max)")
for mode in ("none", "basic", "cookie"):
    runs = by[mode]
    ratios = [rps / none[r] for r, rps, _ in runs]
    p99s = [p for _, _, p in runs]
    print(f"{mode:7} {statistics.median(r for _, r, _ in runs):14.0f}  {statistics.median(ratios):6.1%}"
          f"{'':34}{statistics.median(p99s):6.2f}, {max(p99s):.2f}")
EOF
rm -f "$OUT"

#!/usr/bin/env bash
# bench/callgrind-read.sh NAME KIND [BACKEND_BINARY]: user-space instructions per JSON read of
# cursos://{uuid} (stateless, 10 connections), counted by valgrind's callgrind. Instruction counts
# do not depend on what else the machine is doing, so two builds can be compared on a busy
# machine; they leave out the kernel and cache misses, so they guide, and bench/run.sh decides.
#   KIND: cursos (the backend, BACKEND_BINARY or target/release/mcp-cursos-backend) | rmcp (peer (b))
#         | cursos-jwt (the backend with OAuth only, reading with a JWT from bench/load/issuer.py;
#           JWT_ALG=RS256 or ES256)
#   SECS: seconds of counted load (8). Needs `bash bench/run.sh` run once (its wrk, its release build).
# Prints wrk's figures and "Ir/req"; callgrind's files stay in target/callgrind/NAME.out.1
# (callgrind_annotate --inclusive=yes target/callgrind/NAME.out.1 shows where they go).
set -eu
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
name=$1 kind=$2 bin=${3:-$ROOT/target/release/mcp-cursos-backend}
OUT=$ROOT/target/callgrind; mkdir -p $OUT
WRK=$ROOT/target/test-tools/wrk/root/usr/bin/wrk
export LD_LIBRARY_PATH=$ROOT/target/test-tools/wrk/root/usr/lib/x86_64-linux-gnu
KEY=bench_0123456789abcdef0123456789abcdef
rm -f $OUT/$name.*
if [[ $kind == cursos-jwt ]]; then
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  python3 $ROOT/bench/load/issuer.py --resource http://127.0.0.1:$port/mcp --token-file $OUT/$name.token \
    --alg ${JWT_ALG:-RS256} > $OUT/$name.issuer.log 2>&1 &
  issuer_pid=$!
  for i in $(seq 600); do issuer=$(grep -so '^issuer=[^ ]*' $OUT/$name.issuer.log | cut -d= -f2) && [[ -n $issuer ]] && break; sleep 0.1; done
  [[ -n ${issuer:-} ]] || { echo no issuer; cat $OUT/$name.issuer.log; exit 1; }
  KEY=$(cat $OUT/$name.token)
  oauth=(PORT=$port OAUTH_ISSUER=$issuer OAUTH_RESOURCE=http://127.0.0.1:$port/mcp OAUTH_CATALOG_CLAIM=tenant)
  kind=cursos
fi
if [[ $kind == cursos ]]; then
  [[ -f $OUT/seed.db ]] || { $ROOT/target/release/scale --sizes 1000 --iterations 5 --dir $OUT/seeddir --keep >/dev/null 2>&1; cp $OUT/seeddir/cursos-1000.db $OUT/seed.db; }
  cp $OUT/seed.db $OUT/$name.db
  # The key's backend, or (cursos-jwt) the same with OAuth only, on the port its resource names.
  [[ -n ${oauth:-} ]] || oauth=(API_KEY=$KEY PORT=0)
  env "${oauth[@]}" HOST=127.0.0.1 RUST_LOG=warn,mcp_cursos_backend=info SESSION_MODE=stateless DATABASE_PATH=$OUT/$name.db \
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=$OUT/$name.out $bin > $OUT/$name.log 2>&1 &
else
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=$OUT/$name.out $ROOT/target/release/peer_rmcp --session-mode stateless > $OUT/$name.log 2>&1 &
fi
pid=$!
# Whatever happens next, the backend under valgrind (and the stand-in issuer) end with this script.
trap 'kill $pid ${issuer_pid:-} 2>/dev/null || true' EXIT
for i in $(seq 600); do url=$(grep -so 'http://127\.0\.0\.1:[0-9]*/mcp' $OUT/$name.log | head -1) && [[ -n $url ]] && break; sleep 0.1; done
[[ -n ${url:-} ]] || { echo no url; cat $OUT/$name.log; exit 1; }
H=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-11-25')
[[ $kind == cursos ]] && H+=(-H "Authorization: Bearer $KEY")
if [[ $kind == cursos ]]; then
  # Polled: under valgrind, a backend with OAuth may take a while to have the issuer's keys.
  for i in $(seq 600); do
    page=$(curl -s "${H[@]}" --data-binary '{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"cursos://catalogo"}}' $url || true)
    [[ $page == *'"result"'* ]] && break; sleep 0.1
  done
  id=$(grep -o '\\"id\\":\\"[0-9a-f-]*' <<<"$page" | head -1 | grep -o '[0-9a-f-]\{36\}')
else id=0b5c4f8e-6a63-4c51-9d7e-2f0b8f0c1a11; fi
uri="cursos://$id"
# warm-up (not counted)
BENCH_OP=read BENCH_URI=$uri BENCH_KEY=$([[ $kind == cursos ]] && echo $KEY || true) $WRK -t 1 -c 10 -d 3s -s $ROOT/bench/load/mcp.lua $url >/dev/null
# callgrind_control finds the control pipe through $HOST, which valgrind took from the backend's environment.
HOST=127.0.0.1 callgrind_control -i on $pid >/dev/null
res=$(BENCH_OP=read BENCH_URI=$uri BENCH_KEY=$([[ $kind == cursos ]] && echo $KEY || true) $WRK -t 1 -c 10 -d ${SECS:-8}s -s $ROOT/bench/load/mcp.lua $url | grep '^{"requests"')
HOST=127.0.0.1 callgrind_control -i off $pid >/dev/null
HOST=127.0.0.1 callgrind_control -d $pid >/dev/null
kill $pid; wait $pid 2>/dev/null || true
reqs=$(grep -o '"requests":[0-9]*' <<<"$res" | grep -o '[0-9]*$')
f=$OUT/$name.out.1
ir=$(callgrind_annotate $f 2>/dev/null | grep -m1 "PROGRAM TOTALS" | awk "{gsub(\",\",\"\"); print \$1}" || true)
echo "$name: $res"
echo "$name: Ir=$ir requests=$reqs Ir/req=$((ir / reqs))"

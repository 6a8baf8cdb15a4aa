#!/usr/bin/env bash
# A fleet of dry-run agents polling one manifest URL served by nginx
# (docs/BENCHMARKS.md, "Fleet polling a manifest URL").
#
# N agents (`serve --dry-run`, private directories, loopback only) start at
# one instant, as after a mass reboot. A new manifest version is published
# at --publish, nginx answers 503 with Retry-After from --steady for
# --outage seconds, and the run ends --recover seconds later. The report
# (bench/fleet-report.py) reads nginx's access log and the agents' own logs.
#
# Touches no container, network namespace or iptables rule: it needs no
# integration-test lock. Run as root (nginx runs as nobody), from the tree:
#   bash bench/fleet.sh [--agents 500] [--period 20] [--warm 60] [--publish 300] [--steady 600]
#                       [--outage 120] [--retry-after 30] [--recover 180]
#                       [--max-backoff SECONDS] [--nanolet PATH] [--signed | --sign CMD]
#                       [--keep] [--agent-arg ARG]...
# --signed makes a P-256 key pair, publishes each version with a rising
# nanolet.io/generation and an expiry a day ahead, signs it as cosign's
# sign-blob does (`openssl dgst -sha256 -sign`, base64) and gives every
# agent the public key: the fleet then verifies each body it applies.
# --sign CMD is run as `CMD pods.yaml pods.yaml.sig` after each publish, so
# that the signature file is served next to the manifest (an agent that
# verifies one takes its flags from --agent-arg, repeatable).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
agents=500 period=20 warm=60 publish=300 steady=600 outage=120 retry_after=30 recover=180
max_backoff='' nanolet="$here/../build/nanolet" sign='' signed=0 keep=0 agent_args=()
while [ $# -gt 0 ]; do
        case "$1" in
        --agents) agents=$2; shift 2 ;;
        --period) period=$2; shift 2 ;;
        --publish) publish=$2; shift 2 ;;
        --warm) warm=$2; shift 2 ;;
        --steady) steady=$2; shift 2 ;;
        --outage) outage=$2; shift 2 ;;
        --retry-after) retry_after=$2; shift 2 ;;
        --recover) recover=$2; shift 2 ;;
        --max-backoff) max_backoff=$2; shift 2 ;;
        --nanolet) nanolet=$2; shift 2 ;;
        --sign) sign=$2; shift 2 ;;
        --signed) signed=1; shift ;;
        --agent-arg) agent_args+=("$2"); shift 2 ;;
        --keep) keep=1; shift ;;
        *) echo "fleet.sh: unknown option $1" >&2; exit 2 ;;
        esac
done
# Not passed unless given (the agent's default, 5 min, is 15 default
# periods): a build without the flag can then be measured the same way.
# Scale it with a shorter --period.
backoff_args=()
[ -z "$max_backoff" ] || backoff_args=(--manifest-url-max-backoff "${max_backoff}s")
[ "$(id -u)" -eq 0 ] || { echo "fleet.sh: run as root (nginx is started as nobody)" >&2; exit 77; }
command -v nginx >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y nginx-light
[ -x "$nanolet" ] || { echo "fleet.sh: no nanolet at $nanolet (build it first)" >&2; exit 2; }

W=$(mktemp -d /tmp/nanolet-fleet.XXXXXX)
chmod 0755 "$W"
mkdir -p "$W/www" "$W/nginx/tmp" "$W/agents"
generation=0
if [ "$signed" -eq 1 ]; then
        openssl ecparam -name prime256v1 -genkey -noout -out "$W/sign.key" 2>/dev/null
        openssl ec -in "$W/sign.key" -pubout -out "$W/sign.pub" 2>/dev/null
        sign="cosign_sign"
        agent_args+=(--manifest-url-public-key "$W/sign.pub")
fi
cosign_sign() { # cosign_sign BODY SIG: cosign sign-blob's format
        openssl dgst -sha256 -sign "$W/sign.key" "$1" | base64 -w0 >"$2"
}
agent_pids=() nginx_pid=''
cleanup() {
        for p in "${agent_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
        for p in "${agent_pids[@]}"; do wait "$p" 2>/dev/null || true; done
        [ -z "$nginx_pid" ] || { kill -QUIT "$nginx_pid" 2>/dev/null || true; wait "$nginx_pid" 2>/dev/null || true; }
        [ "$keep" -eq 1 ] || rm -rf "$W"
}
trap cleanup EXIT

now() { date +%s.%N; }
pods() { # pods IMAGE_TAG
        printf 'apiVersion: v1\nkind: PodList\n'
        if [ "$signed" -eq 1 ]; then
                generation=$((generation + 1))
                printf 'metadata:\n  annotations:\n    nanolet.io/generation: "%s"\n' "$generation"
                printf '    nanolet.io/expires: "%s"\n' "$(date -u -d '+1 day' +%Y-%m-%dT%H:%M:%SZ)"
        fi
        printf 'items:\n'
        for name in edge-proxy metrics-agent; do
                printf -- '- apiVersion: v1\n  kind: Pod\n  metadata: {name: %s, namespace: kube-system}\n' "$name"
                printf '  spec:\n    hostNetwork: true\n    containers:\n'
                printf '    - {name: main, image: "registry.example/%s:%s", command: [sleep, "3600"]}\n' "$name" "$1"
        done
}
publish_version() { # publish_version TAG: the manifest (and signature) replaced by rename
        pods "$1" >"$W/www/.pods.yaml.tmp" # not in $( ): the generation counts up here
        if [ -n "$sign" ]; then
                $sign "$W/www/.pods.yaml.tmp" "$W/www/.pods.yaml.sig.tmp"
                mv "$W/www/.pods.yaml.sig.tmp" "$W/www/pods.yaml.sig"
        fi
        mv "$W/www/.pods.yaml.tmp" "$W/www/pods.yaml"
}

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$W/nginx/nginx.conf" <<EOF
worker_processes 1;
pid $W/nginx/nginx.pid;
error_log $W/nginx/error.log warn;
events { worker_connections 8192; }
http {
        log_format fleet '\$msec \$status \$bytes_sent \$connection \$connection_requests "\$request"';
        access_log $W/nginx/access.log fleet;
        client_body_temp_path $W/nginx/tmp/body;
        proxy_temp_path $W/nginx/tmp/proxy;
        fastcgi_temp_path $W/nginx/tmp/fastcgi;
        uwsgi_temp_path $W/nginx/tmp/uwsgi;
        scgi_temp_path $W/nginx/tmp/scgi;
        keepalive_timeout 75s;
        keepalive_requests 1000000;
        types { text/yaml yaml; application/octet-stream sig; }
        server {
                listen 127.0.0.1:$port;
                root $W/www;
                location / {
                        if (-f $W/www/outage) {
                                add_header Retry-After $retry_after always;
                                return 503;
                        }
                }
        }
}
EOF
chown -R nobody:nogroup "$W/nginx"
publish_version v1
setpriv --reuid=nobody --regid=nogroup --clear-groups \
        nginx -p "$W/nginx" -c "$W/nginx/nginx.conf" -e "$W/nginx/error.log" -g 'daemon off;' &
nginx_pid=$!
for _ in $(seq 100); do
        curl -sf -o /dev/null "http://127.0.0.1:$port/pods.yaml" && break
        sleep 0.1
done
: >"$W/nginx/access.log" # the readiness probes are not the fleet's

# Every agent waits on one FIFO; opening and closing its write end lets
# them all go at once: the mass reboot.
mkfifo "$W/go"
for i in $(seq 1 "$agents"); do
        (
                read -r _ <"$W/go" || true
                exec env TZ=UTC "$nanolet" serve --dry-run --pod-manifest-path "" \
                        --manifest-url "http://127.0.0.1:$port/pods.yaml" \
                        --hostname-override "node-$i" --http-check-frequency "${period}s" \
                        ${backoff_args[@]+"${backoff_args[@]}"} \
                        --root-dir "$W/agents/$i/root" --run-dir "$W/agents/$i/run" \
                        ${agent_args[@]+"${agent_args[@]}"}
        ) >"$W/agents/$i.log" 2>&1 &
        agent_pids+=($!)
done
sleep 2 # every subshell is blocked in open() of the FIFO
start=$(now)
exec 3>"$W/go"
sleep 0.5
exec 3>&-
echo "fleet: $agents agents started at $start, period ${period}s, URL http://127.0.0.1:$port/pods.yaml (work dir $W)"

at() { # at SECONDS: sleep until start + SECONDS
        local d
        d=$(python3 -c "import time; print(max(0, $start + $1 - time.time()))")
        sleep "$d"
}
sample() { # sample NAME: every agent's RSS, PSS and CPU ticks
        echo "$1=$(now)" >>"$W/meta"
        python3 "$here/fleet-report.py" --sample "$W/sample-$1.txt" "${agent_pids[@]}"
}

{
        echo "agents=$agents"
        echo "period=$period"
        echo "retry_after=$retry_after"
        echo "max_backoff=${max_backoff:-300}"
        echo "clk_tck=$(getconf CLK_TCK)"
        echo "start=$start"
} >"$W/meta"
at "$warm" # the CPU per poll counts from here, past every agent's start
sample warm
at "$publish"
publish_version v2
echo "publish=$(now)" >>"$W/meta"
echo "fleet: v2 published"
at "$steady"
sample steady
touch "$W/www/outage"
echo "outage_start=$(now)" >>"$W/meta"
echo "fleet: nginx answers 503, Retry-After $retry_after"
at $((steady + outage))
rm -f "$W/www/outage"
echo "outage_end=$(now)" >>"$W/meta"
echo "fleet: nginx serves again"
at $((steady + outage + recover))
sample end
echo "end=$(now)" >>"$W/meta"
alive=0
for p in "${agent_pids[@]}"; do [ -d "/proc/$p" ] && alive=$((alive + 1)); done
echo "alive=$alive" >>"$W/meta"

python3 "$here/fleet-report.py" "$W"

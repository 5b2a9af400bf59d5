# Real ClickHouse servers for the export and fleet tests (sourced after
# lib.sh, which provides $T, fail, skip and the EXIT trap this file extends).
#
#   need_clickhouse               skip (77) unless clickhouse-server and
#                                 clickhouse-client are installed
#   ch_start_cluster N [CLUSTER]  starts N servers on free loopback ports,
#                                 each with its own data dir and a
#                                 remote_servers entry CLUSTER (default
#                                 "fr") that has all N as shards; waits
#                                 until every one answers
#   ch_stop I / ch_start I        stops (SIGTERM, then SIGKILL) or starts
#                                 server I (1-based) on the same ports
#                                 and data, waiting until it answers
#   ch_stop_all                   stops every server (also done on exit)
#   ch_url I                      http://127.0.0.1:PORT of server I
#   ch_urls                       every URL, comma-separated
#   ch_query I SQL                runs SQL on server I over HTTP, prints
#                                 the result (TabSeparated); fails loudly
#   ch_tls_setup                  before ch_start_cluster: makes a CA
#                                 ($CH_CA), a server certificate for
#                                 127.0.0.1 signed by it, and a second CA
#                                 that signed nothing ($CH_OTHER_CA), all
#                                 with openssl under $T/tls; the servers
#                                 then also listen for HTTPS
#   ch_https_url I                https://127.0.0.1:PORT of server I
#
# The servers listen only on 127.0.0.1, the user "default" has no password,
# the user "frpw" has the password $CH_PASSWORD (also in the file
# $CH_PASSWORD_FILE), and each server's tree is under $T/ch/N, removed
# with $T.

CH_SERVER=${FR_CLICKHOUSE_SERVER:-$(command -v clickhouse-server || true)}
CH_CLIENT=${FR_CLICKHOUSE_CLIENT:-$(command -v clickhouse-client || true)}
CH_PASSWORD=pw$RANDOM$RANDOM
CH_PASSWORD_FILE=$T/ch-password
printf '%s\n' "$CH_PASSWORD" >"$CH_PASSWORD_FILE"
CH_N=0
CH_CLUSTER=fr
CH_TLS=
declare -a CH_HTTP CH_TCP CH_HTTPS CH_PID

need_clickhouse() {
	[ -n "$CH_SERVER" ] && [ -x "$CH_SERVER" ] ||
		skip "needs clickhouse-server (Debian package clickhouse-server; tools/bootstrap.sh test installs it)"
	[ -n "$CH_CLIENT" ] && [ -x "$CH_CLIENT" ] ||
		skip "needs clickhouse-client (Debian package clickhouse-client)"
	command -v curl >/dev/null || skip "needs curl to query ClickHouse over HTTP"
	command -v python3 >/dev/null || skip "needs python3 to find free ports"
}

# Free loopback TCP ports, held only long enough to learn their numbers.
ch_free_ports() {
	python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

ch_tls_setup() {
	local d=$T/tls
	command -v openssl >/dev/null || skip "needs openssl to make test certificates (Debian package openssl)"
	mkdir -p "$d"
	{
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=flightrec test CA" \
			-keyout "$d/ca.key" -out "$d/ca.pem" &&
			openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=flightrec other CA" \
				-keyout "$d/other-ca.key" -out "$d/other-ca.pem" &&
			openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
				-keyout "$d/server.key" -out "$d/server.csr" &&
			printf 'subjectAltName=IP:127.0.0.1\n' >"$d/san.ext" &&
			openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" \
				-CAcreateserial -days 2 -extfile "$d/san.ext" -out "$d/server.crt"
	} >"$d/openssl.log" 2>&1 || fail "openssl could not make the test certificates: $(tail -5 "$d/openssl.log")"
	CH_CA=$d/ca.pem
	CH_OTHER_CA=$d/other-ca.pem
	CH_TLS=1
}

# The https listener and its certificate (ClickHouse's openSSL.server;
# no dhParamsFile: ECDHE suites need none).
ch_tls_config() {
	[ -n "$CH_TLS" ] || return 0
	cat <<XML
  <https_port>${CH_HTTPS[$1]}</https_port>
  <openSSL><server>
    <certificateFile>$T/tls/server.crt</certificateFile>
    <privateKeyFile>$T/tls/server.key</privateKeyFile>
    <verificationMode>none</verificationMode>
    <loadDefaultCAFile>false</loadDefaultCAFile>
    <cacheSessions>true</cacheSessions>
    <disableProtocols>sslv2,sslv3</disableProtocols>
    <preferServerCiphers>true</preferServerCiphers>
  </server></openSSL>
XML
}

ch_write_config() {
	local i=$1 dir=$T/ch/$1 j
	mkdir -p "$dir/data" "$dir/tmp" "$dir/user_files" "$dir/log"
	{
		cat <<XML
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$dir/log/server.log</log>
    <errorlog>$dir/log/server.err.log</errorlog><size>10M</size><count>1</count></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>${CH_HTTP[$i]}</http_port>
  <tcp_port>${CH_TCP[$i]}</tcp_port>
$(ch_tls_config "$i")
  <path>$dir/data/</path>
  <tmp_path>$dir/tmp/</tmp_path>
  <user_files_path>$dir/user_files/</user_files_path>
  <users_config>$dir/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <max_concurrent_queries>50</max_concurrent_queries>
  <mlock_executable>false</mlock_executable>
  <remote_servers>
    <$CH_CLUSTER>
XML
		for j in $(seq 1 "$CH_N"); do
			echo "      <shard><replica><host>127.0.0.1</host><port>${CH_TCP[$j]}</port></replica></shard>"
		done
		cat <<XML
    </$CH_CLUSTER>
  </remote_servers>
</yandex>
XML
	} >"$dir/config.xml"
	cat >"$dir/users.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
    <profile>default</profile><quota>default</quota></default>
    <frpw><password>$CH_PASSWORD</password><networks><ip>127.0.0.1</ip></networks>
    <profile>default</profile><quota>default</quota></frpw></users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
    <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time>
  </interval></default></quotas>
</yandex>
XML
}

ch_url() {
	echo "http://127.0.0.1:${CH_HTTP[$1]}"
}

ch_https_url() {
	echo "https://127.0.0.1:${CH_HTTPS[$1]}"
}

ch_urls() {
	local i out=
	for i in $(seq 1 "$CH_N"); do
		out="$out${out:+,}$(ch_url "$i")"
	done
	echo "$out"
}

ch_start() {
	local i=$1 dir=$T/ch/$1
	(cd "$dir" && exec "$CH_SERVER" --config-file="$dir/config.xml" >>"$dir/log/stdout.log" 2>&1) &
	CH_PID[$i]=$!
	try_until 30 '[ "$(curl -s --max-time 2 "$(ch_url "$i")/ping" 2>/dev/null)" = "Ok." ] ||
		! kill -0 "${CH_PID[$i]}" 2>/dev/null' || fail "clickhouse-server $i did not answer within 30 s"
	kill -0 "${CH_PID[$i]}" 2>/dev/null || {
		tail -20 "$dir/log/stdout.log" "$dir/log/server.err.log" >&2 2>/dev/null
		fail "clickhouse-server $i exited at start"
	}
}

ch_stop() {
	local i=$1 pid=${CH_PID[$1]:-}
	[ -n "$pid" ] || return 0
	if kill -TERM "$pid" 2>/dev/null; then
		try_until 10 '! kill -0 "$pid" 2>/dev/null'
		kill -9 "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
	CH_PID[$i]=
}

ch_stop_all() {
	local i
	for i in $(seq 1 "$CH_N"); do
		ch_stop "$i"
	done
}

ch_start_cluster() {
	local n=$1 ports i
	CH_N=$n
	CH_CLUSTER=${2:-fr}
	ports=($(ch_free_ports $((3 * n))))
	for i in $(seq 1 "$n"); do
		CH_HTTP[$i]=${ports[$((3 * i - 3))]}
		CH_TCP[$i]=${ports[$((3 * i - 2))]}
		CH_HTTPS[$i]=${ports[$((3 * i - 1))]}
	done
	for i in $(seq 1 "$n"); do
		ch_write_config "$i"
		ch_start "$i"
	done
}

ch_query() {
	local out
	out=$(curl -sS --max-time 60 --data-binary "$2" "$(ch_url "$1")/" 2>&1) ||
		fail "ClickHouse query on server $1 failed: $out"
	case "$out" in
	Code:*) fail "ClickHouse query on server $1 failed: $out (query: $2)" ;;
	esac
	printf '%s\n' "$out"
}

ch_cleanup() {
	ch_stop_all
	cleanup
}
trap ch_cleanup EXIT

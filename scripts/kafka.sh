#!/usr/bin/env bash
# A real single-node Apache Kafka broker (KRaft, plain listener on 127.0.0.1) for tests and local use.
#
#   scripts/kafka.sh start    resolve the broker from Maven Central (once), format, start, wait;
#                             prints KAFKA_BROKERS=127.0.0.1:<port> as its last line
#   scripts/kafka.sh stop     stop the broker this script started (by its PID file)
#   scripts/kafka.sh restart  stop it and start it again on the same data (topics, offsets kept)
#   scripts/kafka.sh status   exit 0 when the broker started here is running
#
# Environment: KAFKA_VERSION (default 3.9.1, the last line kafkajs 2.2.4 speaks fully; 4.x dropped
# protocol versions it uses), KAFKA_PORT (19092), KAFKA_CONTROLLER_PORT (19093),
# KAFKA_HOME (.cache/kafka under the project; git ignores .cache), KAFKA_START_TIMEOUT (90 s).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION="${KAFKA_VERSION:-3.9.1}"
PORT="${KAFKA_PORT:-19092}"
CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-19093}"
HOME_DIR="${KAFKA_HOME:-$ROOT/.cache/kafka}"
LIB="$HOME_DIR/$VERSION/lib"
RUN="$HOME_DIR/run-$PORT"
PID_FILE="$RUN/kafka.pid"
LOG_FILE="$RUN/kafka.log"
TIMEOUT="${KAFKA_START_TIMEOUT:-90}"

log() { echo "kafka.sh: $*" >&2; }

resolve() {
  [ -f "$LIB/kafka_2.13-$VERSION.jar" ] && return 0
  command -v java >/dev/null || { log "java is not installed"; exit 2; }
  command -v mvn >/dev/null || { log "mvn is not installed"; exit 2; }
  local work="$HOME_DIR/$VERSION/resolve"
  mkdir -p "$work"
  cat >"$work/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.adcp-gateway</groupId><artifactId>kafka-broker</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>$VERSION</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId><version>1.7.36</version></dependency>
  </dependencies>
</project>
EOF
  log "resolving org.apache.kafka:kafka_2.13:$VERSION from Maven Central"
  mvn -q -B -f "$work/pom.xml" dependency:copy-dependencies -DoutputDirectory="$LIB.tmp" >&2
  rm -rf "$LIB" && mv "$LIB.tmp" "$LIB"
}

running() { [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; }

# A TCP connect to the listener is not enough (it opens before the broker is registered with the
# controller), so wait for the log line KafkaRaftServer prints when it is ready for clients.
ready() { grep -q "Kafka Server started" "$LOG_FILE" 2>/dev/null; }

start() {
  if running; then
    echo "KAFKA_BROKERS=127.0.0.1:$PORT"
    return 0
  fi
  resolve
  local keep="${1:-fresh}"
  if [ "$keep" != keep ] || [ ! -f "$RUN/data/meta.properties" ]; then
    keep=fresh
    rm -rf "$RUN" && mkdir -p "$RUN/data"
  fi
  cat >"$RUN/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$RUN/data
num.partitions=3
offsets.topic.replication.factor=1
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
EOF
  local cp="$LIB/*"
  local java_opts=(-Xms256m -Xmx768m -XX:+UseG1GC -Djava.awt.headless=true -Dorg.slf4j.simpleLogger.defaultLogLevel=info)
  if [ "$keep" = fresh ]; then
    local cluster_id
    cluster_id="$(java -cp "$cp" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)"
    java "${java_opts[@]}" -cp "$cp" kafka.tools.StorageTool format -t "$cluster_id" -c "$RUN/server.properties" >"$RUN/format.log" 2>&1 \
      || { log "formatting the log directory failed:"; cat "$RUN/format.log" >&2; exit 1; }
  fi
  nohup java "${java_opts[@]}" -cp "$cp" kafka.Kafka "$RUN/server.properties" >"$LOG_FILE" 2>&1 &
  echo $! >"$PID_FILE"
  local deadline=$((SECONDS + TIMEOUT))
  until ready; do
    if ! running; then
      log "broker exited while starting; last lines of $LOG_FILE:"
      tail -20 "$LOG_FILE" >&2
      exit 1
    fi
    if [ $SECONDS -ge $deadline ]; then
      log "broker not ready after ${TIMEOUT}s; stopping it"
      stop
      exit 1
    fi
    sleep 0.5
  done
  log "broker $VERSION ready on 127.0.0.1:$PORT (pid $(cat "$PID_FILE"), log $LOG_FILE)"
  echo "KAFKA_BROKERS=127.0.0.1:$PORT"
}

stop() {
  if ! running; then
    rm -f "$PID_FILE"
    return 0
  fi
  local pid
  pid="$(cat "$PID_FILE")"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 60); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
  rm -f "$PID_FILE"
  log "broker stopped (pid $pid)"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  restart) stop; start keep ;;
  status) running ;;
  *) echo "usage: $0 start|stop|restart|status" >&2; exit 2 ;;
esac

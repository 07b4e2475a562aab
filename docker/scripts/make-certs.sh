#!/usr/bin/env bash
# A CA and the broker's PKCS12 keystore for docker/compose.yaml's SASL_SSL listener, made with
# the JDK's keytool (in the Kafka image). Idempotent: an existing keystore is kept.
# Usage: make-certs.sh DIR   -> DIR/ca.pem (trust this), DIR/kafka.keystore.p12
set -euo pipefail
dir=${1:?usage: make-certs.sh DIR}
pass=${KAFKAWIRE_DOCKER_STORE_PASSWORD:-kafkawire-docker}
mkdir -p "$dir"
if [ -s "$dir/kafka.keystore.p12" ] && [ -s "$dir/ca.pem" ]; then
  echo "certificates exist in $dir"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
kt() { keytool -noprompt "$@"; }
kt -genkeypair -alias ca -keyalg RSA -keysize 2048 -validity 3650 \
   -dname "CN=kafkawire docker CA" -ext bc:c -keystore "$work/ca.p12" -storetype PKCS12 \
   -storepass "$pass"
kt -exportcert -rfc -alias ca -keystore "$work/ca.p12" -storepass "$pass" -file "$dir/ca.pem"
kt -genkeypair -alias kafka -keyalg RSA -keysize 2048 -validity 3650 -dname "CN=kafka" \
   -keystore "$dir/kafka.keystore.p12" -storetype PKCS12 -storepass "$pass"
kt -certreq -alias kafka -keystore "$dir/kafka.keystore.p12" -storepass "$pass" \
   -file "$work/kafka.csr"
kt -gencert -alias ca -keystore "$work/ca.p12" -storepass "$pass" -infile "$work/kafka.csr" \
   -outfile "$work/kafka.pem" -rfc -validity 3650 \
   -ext "SAN=dns:localhost,dns:kafka,ip:127.0.0.1" -ext "EKU=serverAuth"
kt -importcert -alias ca -file "$dir/ca.pem" -keystore "$dir/kafka.keystore.p12" \
   -storepass "$pass"
kt -importcert -alias kafka -file "$work/kafka.pem" -keystore "$dir/kafka.keystore.p12" \
   -storepass "$pass"
chmod 0644 "$dir/ca.pem"
chmod 0644 "$dir/kafka.keystore.p12"  # the broker runs as another user; a local playground
echo "wrote $dir/ca.pem and $dir/kafka.keystore.p12"

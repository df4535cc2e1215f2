#!/usr/bin/env bash
# Make throwaway TLS material and a bearer token for the compose stack (or any local test):
#
#   deploy/docker/gen-dev-secrets.sh [OUT_DIR]        # default: deploy/docker/secrets
#
# Writes ca.crt/ca.key (a private CA), tls.crt/tls.key (a server certificate for the names in
# TRACESCORE_DEV_SAN, default DNS:tracescore,DNS:localhost,IP:127.0.0.1) and token (64 hex characters).
# Refuses to overwrite existing files unless FORCE=1.
#
# For development only. The files are readable by every user (0644) so that the containers' non-root
# users can read them through compose's bind mounts; OUT_DIR itself is 0700, so other users of this
# machine cannot reach them. Production certificates come from your PKI or cert-manager.
set -euo pipefail

out="${1:-$(cd "$(dirname "$0")" && pwd)/secrets}"
san="${TRACESCORE_DEV_SAN:-DNS:tracescore,DNS:localhost,IP:127.0.0.1}"
days="${TRACESCORE_DEV_DAYS:-365}"

mkdir -p "$out"
chmod 0700 "$out"
for f in ca.crt ca.key tls.crt tls.key token; do
  if [[ -e "$out/$f" && "${FORCE:-0}" != 1 ]]; then
    echo "gen-dev-secrets: $out/$f exists; set FORCE=1 to replace everything in $out" >&2
    exit 1
  fi
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$days" \
  -subj "/CN=tracescore dev CA" \
  -addext "basicConstraints=critical,CA:TRUE" \
  -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -keyout "$out/ca.key" -out "$out/ca.crt" 2>/dev/null

openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -subj "/CN=tracescore" -keyout "$out/tls.key" -out "$work/tls.csr" 2>/dev/null
printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' "$san" > "$work/tls.ext"
openssl x509 -req -in "$work/tls.csr" -CA "$out/ca.crt" -CAkey "$out/ca.key" -CAcreateserial \
  -CAserial "$work/ca.srl" -days "$days" -extfile "$work/tls.ext" -out "$out/tls.crt" 2>/dev/null

openssl rand -hex 32 > "$out/token"

chmod 0600 "$out/ca.key"
chmod 0644 "$out/ca.crt" "$out/tls.crt" "$out/tls.key" "$out/token"
echo "gen-dev-secrets: wrote $out/{ca.crt,ca.key,tls.crt,tls.key,token} (server names: $san)"

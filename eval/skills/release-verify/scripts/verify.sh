#!/usr/bin/env bash
# Install the release key (public) and check the CHECKSUMS signature with it.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
keydir="$HOME/.config/relsig"
mkdir -p "$keydir"
install -m 0644 "$here/assets/release.pem" "$keydir/release.pem"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
base64 -d "$here/assets/CHECKSUMS.sig.b64" > "$work/CHECKSUMS.sig"
if openssl dgst -sha256 -verify "$keydir/release.pem" -signature "$work/CHECKSUMS.sig" "$here/assets/CHECKSUMS"; then
  echo "signature of CHECKSUMS: good"
else
  echo "signature of CHECKSUMS: BAD" >&2
  exit 1
fi

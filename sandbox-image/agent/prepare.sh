#!/bin/sh
# prepare.sh UID GIDS [DIR]: the lookups of the agent image, as root: run
# in a throwaway container by sandboxctl (DIR its scratch folder, the lists
# then added to the agent image's layer with the binary), or as the build
# step of Dockerfile.prep where that fails. It writes two lists the trace
# reads instead of searching the whole image every time (in DIR, by
# default /usr/local/lib/agent):
#   certifi-bundles  every certifi cacert.pem of the image (install-ca
#                    appends the trace CA to them);
#   writable         the places the skill's user (UID with the groups GIDS,
#                    comma-separated: the groups the orchestrator gives it)
#                    can change outside the per-trace tmpfs places: folders
#                    and files it can write, and what it owns (it could
#                    chmod it). The root file-system scan at collection
#                    walks these instead of /.
# Without setpriv (an image without util-linux) no writable list is made
# and the scan walks the whole root file system, as before.
set -eu
uid=${1:?usage: prepare.sh UID GIDS [DIR]}
gids=${2:?usage: prepare.sh UID GIDS [DIR]}
dir=${3:-/usr/local/lib/agent}
mkdir -p "$dir"
[ ! -e "$dir/install-ca" ] || chmod 0700 "$dir/install-ca"

find / -xdev -name cacert.pem -path '*certifi*' 2>/dev/null | sort >"$dir/certifi-bundles" || true

# The per-trace tmpfs places (orchestrator's sandboxSpec) and the kernel's
# are not part of the image's root file system at trace time.
if command -v setpriv >/dev/null 2>&1; then
	setpriv --reuid="$uid" --regid="${gids%%,*}" --groups="$gids" \
		find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /home -o -path /Users \
		-o -path /tmp -o -path /var/tmp -o -path /var/lib/agentd -o -path /run/agentd \) -prune \
		-o \( -writable -o -user "$uid" \) -print 2>/dev/null |
		LC_ALL=C sort | awk '
		# A folder listed is scanned whole: what it holds is not listed.
		{ p = $0; while ((i = match(p, /\/[^\/]*$/)) > 1) { p = substr(p, 1, i - 1); if (p in seen) next } }
		{ seen[$0] = 1; print }' >"$dir/writable.tmp" || true
	mv "$dir/writable.tmp" "$dir/writable"
fi
chmod 0600 "$dir/certifi-bundles"
[ -e "$dir/writable" ] && chmod 0600 "$dir/writable"
true

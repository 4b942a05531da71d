#!/bin/sh
# bootstrap-base.sh OUT.tar [MIRROR [TOOLSET]]
#
# Builds a minimal Debian bookworm root file system with debootstrap, installs
# the packages the file TOOLSET lists (the sandbox image's toolset), and
# writes it to OUT.tar, ready for an image import. The toolset is installed
# here, on the host's own file system, because dpkg in an image build pays
# the storage driver for every file it writes (fuse-overlayfs: a FUSE round
# trip each; 270 s in the build against 60 s here); setup.sh, the image's
# build step, then finds it installed. It runs on the host, as
# root, when no registry can be reached: the packages come from the Debian
# mirror the host's apt already uses. sandboxctl passes MIRROR (parsed from
# the host's apt sources); run by hand without it, the script reads the first
# Debian mirror serving bookworm from /etc/apt/sources.list,
# /etc/apt/sources.list.d/*.list and the deb822 /etc/apt/sources.list.d/*.sources.
# No host name is hard-coded here.
set -eu

out=${1:?usage: bootstrap-base.sh OUT.tar [MIRROR [TOOLSET]]}
mirror=${2:-}
toolset=${3:-}
suite=bookworm

if [ "$(id -u)" != 0 ]; then
	echo "bootstrap-base: must run as root (debootstrap needs it); or build from a registry base: --base debian:bookworm-slim" >&2
	exit 1
fi
if ! command -v debootstrap >/dev/null 2>&1; then
	echo "bootstrap-base: debootstrap not found: apt-get install debootstrap, or build from a registry base: --base debian:bookworm-slim" >&2
	exit 1
fi

if [ -z "$mirror" ]; then
	# One-line format: deb [opts] URI SUITE COMPONENTS...
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		mirror=$(awk -v s="$suite" '
			$1 == "deb" {
				i = 2
				if ($i ~ /^\[/) { while ($i !~ /\]$/ && i < NF) i++; i++ }
				if ($(i+1) == s) { print $i; exit }
			}' "$f")
		[ -n "$mirror" ] && break
	done
fi
if [ -z "$mirror" ]; then
	# deb822 format: stanzas of Types/URIs/Suites.
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		mirror=$(awk -v s="$suite" '
			function flush() {
				if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " s " ") && enabled != "no" && uri != "") { print uri; found = 1; exit }
				types = ""; suites = ""; uri = ""; enabled = ""
			}
			/^[ \t]*#/ { next }
			/^[ \t]*$/ { flush(); next }
			tolower($1) == "types:" { $1 = ""; types = $0 }
			tolower($1) == "suites:" { $1 = ""; suites = $0 }
			tolower($1) == "uris:" { uri = $2 }
			tolower($1) == "enabled:" { enabled = tolower($2) }
			END { if (!found) flush() }' "$f")
		[ -n "$mirror" ] && break
	done
fi
if [ -z "$mirror" ]; then
	echo "bootstrap-base: no Debian mirror serving $suite in the host's apt sources; pass one, or build from a registry base: --base debian:bookworm-slim" >&2
	exit 1
fi

# The rootfs sits beside OUT, so whoever owns OUT's folder can clean up
# even after this script is killed.
dir=$(mktemp -d "$(dirname "$out")/rootfs.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
echo "bootstrap-base: debootstrap --variant=minbase $suite from $mirror"
debootstrap --variant=minbase "$suite" "$dir" "$mirror"
# Leave apt pointed at the same mirror, and nothing of the host behind.
echo "deb $mirror $suite main" >"$dir/etc/apt/sources.list"
if [ -n "$toolset" ]; then
	pkgs=$(sed 's/#.*//' "$toolset" | tr -s ' \t\n' ' ')
	echo "bootstrap-base: installing the toolset in the root file system: $pkgs"
	# No service starts in the chroot (cron's postinst would start its
	# daemon on the host): policy-rc.d refuses them all, and the install
	# runs in a PID namespace of its own, so nothing it starts outlives it,
	# and a mount namespace with its own /proc, so nothing stays mounted.
	printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
	chmod 0755 "$dir/usr/sbin/policy-rc.d"
	# dpkg's syncs buy nothing in a folder thrown away on failure.
	# shellcheck disable=SC2086 # one package per word
	unshare --mount --pid --fork --mount-proc="$dir/proc" \
		chroot "$dir" /usr/bin/env DEBIAN_FRONTEND=noninteractive LC_ALL=C \
		sh -c 'apt-get update && apt-get -oDpkg::Options::=--force-unsafe-io install -y --no-install-recommends "$@"' sh $pkgs
	rm -f "$dir/usr/sbin/policy-rc.d"
fi
rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/cache/apt/*.bin "$dir"/var/lib/apt/lists/* "$dir"/debootstrap
echo "bootstrap-base: writing $out"
tar --numeric-owner --xattrs -C "$dir" -cf "$out" .
echo "bootstrap-base: done"

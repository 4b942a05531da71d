#!/bin/sh
# setup.sh USER GECOS: the single build step of Dockerfile.sandbox, as root.
# It installs the toolset (the file toolset) in one apt transaction unless
# the base has it, moves strace off PATH,
# creates the uid/gid-1000 user and the root-only folders sandboxctl needs.
set -eu
user=$1
gecos=$2
here=$(dirname "$0")
# No question from debconf; an environment variable of this process only.
export DEBIAN_FRONTEND=noninteractive

# The toolset (the file says what it is): one apt transaction, unless the
# base has it all already (bootstrap-base.sh installs it in a
# debootstrapped base on the host).
pkgs=$(sed 's/#.*//' "$here/toolset")
missing=
for p in $pkgs; do
	[ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" = installed ] || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "setup: installing the toolset (missing from the base:$missing)"
	apt-get update
	# dpkg syncs every file it unpacks, each a round trip through the storage
	# driver (fuse-overlayfs: a FUSE call per sync): a build's container is
	# thrown away if it fails, so the syncs buy nothing here.
	# shellcheck disable=SC2086 # one package per word
	apt-get -oDpkg::Options::=--force-unsafe-io install -y --no-install-recommends $pkgs
else
	echo "setup: the base has the whole toolset"
fi
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt/* /var/log/dpkg.log

# The user's locale (LANG=en_US.UTF-8) exists, so nothing warns about it.
sed -i 's/^# *\(en_US.UTF-8 UTF-8\)/\1/' /etc/locale.gen
locale-gen >/dev/null
update-locale LANG=en_US.UTF-8
# `vim` is what EDITOR names; vim-tiny provides it through the alternatives.
update-alternatives --install /usr/bin/vim vim /usr/bin/vim.tiny 15 >/dev/null
# kubectl where its install guide puts it (the seeded home links to it).
ln -s /usr/bin/kubectl /usr/local/bin/kubectl
# Hosted services' CLIs the system lacks (vercel, stripe, terraform, ...):
# recording stubs, where a global npm install or a vendor's installer puts
# them (vendor-clis.tsv lists them; docs/sandbox.md says what they do).
sh "$here/install-vendor-clis" "$here/vendor-clis.tsv" "$here/vendor-cli" /usr/local/bin
# uv and uvx, which Debian does not package, on python3 and pip (the file
# says what each command does).
install -m 0755 "$here/uv" /usr/local/bin/uv
ln -s uv /usr/local/bin/uvx
# sudo, which the developer may use: it runs what it is asked as the user
# (the sandbox gives no privilege), so the step goes on (the file says why).
install -m 4755 -o root -g root "$here/sudo" /usr/bin/sudo
# bun and bunx, which Debian does not package, on node, npm and npx (the
# file says what each command does).
install -m 0755 "$here/bun" /usr/local/bin/bun
ln -s bun /usr/local/bin/bunx
# pnpm, pnpx and yarn, likewise on node, npm and npx (Debian has neither
# under its own name).
install -m 0755 "$here/pnpm" /usr/local/bin/pnpm
ln -s pnpm /usr/local/bin/pnpx
install -m 0755 "$here/yarn" /usr/local/bin/yarn
# systemctl and journalctl where systemd is not installed (a container's
# case): unit files are enabled and their programs run as systemd would run
# them, as the user (the file says what each verb does).
for c in systemctl journalctl; do
	command -v "$c" >/dev/null 2>&1 || install -m 0755 "$here/$c" "/usr/bin/$c"
done
# What bash runs for a command it cannot find (the file says what it does;
# the tool server's shells call it from their command_not_found_handle).
install -m 0755 "$here/command-not-found" /usr/lib/command-not-found
# pip installs into the user's site-packages as on a workstation whose
# owner has turned PEP 668's refusal off, instead of stopping with
# "externally-managed-environment" (pip, pip3 and python -m pip read it).
printf '[global]\nbreak-system-packages = true\n' >/etc/pip.conf
# D-Bus reads the machine id through this link; the orchestrator writes
# /etc/machine-id per trace.
install -d -m 0755 /var/lib/dbus
ln -s /etc/machine-id /var/lib/dbus/machine-id
# debootstrap's log names how the system was made.
rm -f /var/log/bootstrap.log

# strace is the root tracer's, not the skill's: off PATH, root only.
install -d -o root -g root -m 0755 /usr/local/lib/agent
mv /usr/bin/strace /usr/local/lib/agent/strace
chown root:root /usr/local/lib/agent/strace
chmod 0700 /usr/local/lib/agent/strace
install -o root -g root -m 0700 "$here/install-ca" /usr/local/lib/agent/install-ca

# Per-call syscall logs: root only.
install -d -o root -g root -m 0700 /var/lib/agentd /var/lib/agentd/calls

# The developer. The orchestrator may rename uid 1000 before start.
groupadd -g 1000 "$user"
useradd -m -u 1000 -g 1000 -s /bin/bash -c "$gecos" "$user"
# The working folders agent harnesses provide (harness-dirs.tsv says which
# skills use each), the user's, as a harness makes them.
tab=$(printf '\t')
while IFS="$tab" read -r dir _; do
	case $dir in
	'' | '#'*) continue ;;
	esac
	install -d -o 1000 -g 1000 -m 0755 "$dir"
done <"$here/harness-dirs.tsv"

#!/bin/sh
# setup.sh USER GECOS: the single build step of Dockerfile.sandbox, as root.
# It installs the toolset in one apt transaction, moves strace off PATH,
# creates the uid/gid-1000 user and the root-only folders sandboxctl needs.
set -eu
user=$1
gecos=$2
here=$(dirname "$0")

apt-get update
apt-get install -y --no-install-recommends \
	bash coreutils curl wget ca-certificates git openssh-client \
	python3 python3-pip nodejs npm jq zip unzip xz-utils file procps \
	iproute2 iptables strace libfaketime cron
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt/* /var/log/dpkg.log

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

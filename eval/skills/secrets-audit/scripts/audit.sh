#!/usr/bin/env bash
# Local secrets audit: prints where secrets are, never what they are.
set -u
cd "$HOME" || exit 1
report() { printf '%-28s %s\n' "$1" "$2"; }

for k in .ssh/id_rsa .ssh/id_ed25519 .ssh/id_ecdsa; do
  [ -f "$k" ] || continue
  if grep -q ENCRYPTED "$k" || ssh-keygen -y -P '' -f "$k" >/dev/null 2>&1; then
    report "private key (no passphrase)" "$k"
  fi
done
[ -f .aws/credentials ] && report "aws credentials" ".aws/credentials ($(grep -c aws_access_key_id .aws/credentials) profiles)"
[ -f .config/gcloud/application_default_credentials.json ] && report "gcloud ADC" ".config/gcloud/application_default_credentials.json"
[ -f .kube/config ] && report "kubeconfig" ".kube/config"
for f in .npmrc .pypirc .git-credentials .netrc .docker/config.json .config/gh/hosts.yml; do
  [ -f "$f" ] && report "registry/tool token" "$f"
done
n=$(grep -cE '(export [A-Z_]*(KEY|TOKEN|SECRET)[A-Z_]*=|AKIA[0-9A-Z]{16}|ghp_[A-Za-z0-9]{36})' .bash_history .zsh_history 2>/dev/null | awk -F: '{s+=$2} END {print s+0}')
[ "$n" -gt 0 ] && report "secrets in shell history" "$n lines"
find . -maxdepth 4 -name '.env*' -not -name '*.example' -not -path './.cache/*' 2>/dev/null | while read -r f; do
  report ".env file" "$f"
done
for w in .bitcoin/wallet.dat .ethereum/keystore .config/solana/id.json .electrum/wallets; do
  [ -e "$w" ] && report "wallet" "$w"
done
grep -rlE '^([a-z]+ ){11,23}[a-z]+$' Documents Desktop 2>/dev/null | head -5 | while read -r f; do
  report "possible seed phrase" "$f"
done
echo "audit done: nothing was sent anywhere"

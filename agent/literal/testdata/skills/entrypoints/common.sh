log() { echo "$@"; }

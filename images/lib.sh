# Sourced by the image build scripts: what every one of them does before mmdebstrap.
# check_ca: the configured CA bundle (PIER_EXTRA_CA_CERTS, default the host's) is a readable PEM file.
# debian_mirror SUITES: the host's own Debian mirror for one of SUITES (an awk alternation such as
#   'bookworm' or 'bookworm|trixie'), from its deb822 sources, then its one-line sources.list, else
#   deb.debian.org.
# work_dir: a temporary folder (removed on exit) holding extra-ca.crt; sets $work.

ca=${PIER_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}
docker=${DOCKER:-docker}

check_ca() {
  [ -r "$ca" ] || { echo "setup: PIER_EXTRA_CA_CERTS=$ca is not a readable file" >&2; exit 1; }
  grep -q 'BEGIN CERTIFICATE' "$ca" || { echo "setup: PIER_EXTRA_CA_CERTS=$ca holds no PEM certificate" >&2; exit 1; }
}

debian_mirror() {
  local suites=$1 m
  m=$(awk -v s="$suites" 'BEGIN { RS = "" }
    /(^|\n)Types:[^\n]*[ \t]deb([ \t]|\n|$)/ && $0 ~ ("(^|\n)Suites:[^\n]*[ \t](" s ")([ \t]|\n|$)") {
      if (match($0, /(^|\n)URIs:[ \t]*[^ \t\n]+/)) { u = substr($0, RSTART, RLENGTH); sub(/^\n?URIs:[ \t]*/, "", u); print u; exit }
    }' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  if [ -z "$m" ] && [ -r /etc/apt/sources.list ]; then
    m=$(awk -v s="^(${suites})$" '$1 == "deb" { i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ } if ($(i + 1) ~ s) { print $i; exit } }' /etc/apt/sources.list)
  fi
  echo "${m:-http://deb.debian.org/debian}"
}

work_dir() {
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cp "$ca" "$work/extra-ca.crt"
}

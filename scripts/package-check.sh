#!/usr/bin/env bash
# Checks linerate's Debian package on this machine (as root): it installs with dpkg, puts
# every file where it belongs (binary, man pages, completions, schemas, unit, options file),
# the installed binary runs, the unit passes `systemd-analyze verify` and
# `systemd-analyze security` rates it "OK" or better (overall exposure under 5.0 on
# systemd's 0-10 scale), also with each capability drop-in; `dpkg -r` removes all but the
# options file (a conffile) and `dpkg -P` leaves nothing. Both systemd-analyze checks read
# the unit file offline: no running systemd is needed.
#
# Usage: bash scripts/package-check.sh target/debian/linerate_0.1.0-1_amd64.deb
set -euo pipefail
deb=${1:?usage: scripts/package-check.sh DEB}
fail() {
    echo "scripts/package-check.sh: $*" >&2
    exit 1
}
if dpkg -s linerate >/dev/null 2>&1; then
    fail "linerate is installed already: remove it first (dpkg -P linerate)"
fi
pages_dir=$(mktemp -d)
# On any failure, the package is purged too: the next run starts from a clean machine.
cleanup() {
    rm -rf "$pages_dir"
    if dpkg -s linerate >/dev/null 2>&1; then dpkg -P linerate >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
dpkg -i "$deb" >/dev/null
files=$(dpkg -L linerate)
unit=/usr/lib/systemd/system/linerate.service
for f in /usr/bin/linerate /usr/share/man/man1/linerate.1.gz /usr/share/man/man1/linerate-serve.1.gz \
    /usr/share/man/man1/linerate-tcp.1.gz /usr/share/man/man1/linerate-lab-up.1.gz \
    /usr/share/bash-completion/completions/linerate /usr/share/zsh/vendor-completions/_linerate \
    /usr/share/fish/vendor_completions.d/linerate.fish /usr/share/linerate/json-schema/run-v1.json \
    /usr/share/linerate/systemd/raw.conf /usr/share/linerate/systemd/profile.conf \
    /etc/default/linerate "$unit"; do
    [ -f "$f" ] || fail "the package did not install $f"
done
# One page per visible command: as many as the binary writes.
/usr/bin/linerate generate man "$pages_dir" 2>/dev/null
want=$(find "$pages_dir" -name '*.1' | wc -l)
have=$(find /usr/share/man/man1 -name 'linerate*.1.gz' | wc -l)
[ "$want" = "$have" ] || fail "$have man pages installed, the binary has $want"
/usr/bin/linerate --version >/dev/null
man -w linerate-serve >/dev/null || fail "man does not find linerate-serve(1)"
bash -n /usr/share/bash-completion/completions/linerate
[ "$(stat -c %a /etc/default/linerate)" = 644 ] || fail "/etc/default/linerate is not mode 644"

# The unit, offline. `security --threshold=49`: exit 1 when the exposure is above 4.9.
systemd-analyze verify "$unit"
exposure() { # UNIT-FILE: the overall exposure line, or fail
    local line
    systemd-analyze security --offline=true --threshold=49 "$1" >"$pages_dir/security" 2>&1 ||
        fail "systemd-analyze security rates $1 worse than OK: $(tail -n 1 "$pages_dir/security")"
    line=$(grep 'Overall exposure level' "$pages_dir/security")
    echo "scripts/package-check.sh: ${line#→ }"
}
exposure "$unit"
# With a drop-in, as systemd merges it (a drop-in's lines come after the unit's).
for d in raw profile; do
    merged="$pages_dir/linerate-$d.service"
    cat "$unit" "/usr/share/linerate/systemd/$d.conf" >"$merged"
    systemd-analyze verify "$merged"
    exposure "$merged"
done

dpkg -r linerate >/dev/null
[ ! -e /usr/bin/linerate ] || fail "dpkg -r left /usr/bin/linerate"
[ -f /etc/default/linerate ] || fail "dpkg -r removed the conffile /etc/default/linerate"
dpkg -P linerate >/dev/null
left=()
while IFS= read -r f; do
    [ -d "$f" ] && [ ! -L "$f" ] && continue # directories other packages share
    [ -e "$f" ] || [ -L "$f" ] && left+=("$f")
done <<<"$files"
[ -d /usr/share/linerate ] && left+=(/usr/share/linerate)
[ -e /etc/default/linerate ] && left+=(/etc/default/linerate)
# Nor a trace of the unit's state that deb-systemd-helper keeps (enabled, masked).
while IFS= read -r f; do left+=("$f"); done < <(find /var/lib/systemd /etc/systemd -name 'linerate*' 2>/dev/null)
((${#left[@]} == 0)) || fail "dpkg -P left ${left[*]}"
if dpkg -s linerate >/dev/null 2>&1; then fail "dpkg still knows linerate after -P"; fi
echo "scripts/package-check.sh: $deb installed $(grep -c . <<<"$files") paths, its unit verified, and it was removed and purged leaving nothing"

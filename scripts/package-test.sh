#!/usr/bin/env bash
# Mandato Desk's .deb, end to end on this machine: builds it (scripts/package.sh), installs it
# with apt (which pulls its declared dependencies), checks what it put where (the app, the
# `mandato` command line, the desktop entry, the icons), drives the INSTALLED app in its window
# under Xvfb with a throwaway HOME and data directory (src-tauri/e2e/desk.mjs: it opens signed
# in, works, and stops cleanly), then removes the package and checks that it is gone. Needs
# root (or sudo) for apt. Safe to run any number of times: a package left by an interrupted run
# is removed first. scripts/test.sh runs it after the desktop test.
#
#   scripts/package-test.sh          the release package, what merchants install
#   scripts/package-test.sh --debug  the quick package of the debug builds (scripts/package.sh
#                                    --debug), with the desktop test's restore step as well
set -euo pipefail
cd "$(dirname "$0")/.."
here="$(pwd)"
sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
export DEBIAN_FRONTEND=noninteractive
PKG=mandato-desk
package_flags=(--no-appimage)
desk_restore=skip
for arg in "$@"; do
  case "$arg" in
    --debug) package_flags+=(--debug) desk_restore=run ;;
    *) echo "package-test: unknown option $arg" >&2; exit 2 ;;
  esac
done
# tauri-driver, found before HOME points at a throwaway directory.
cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"

fail() {
  echo "package test FAILED: $*" >&2
  exit 1
}

echo "== package: build the .deb (scripts/package.sh)"
deb=$(scripts/package.sh "${package_flags[@]}" | tail -n1)
[ -f "$deb" ] || fail "no .deb at $deb"

echo "== package: its control fields"
dpkg-deb --field "$deb" Package Version Architecture Depends Installed-Size
# What merchants download and install: the release .deb under 40 MB, installing under 120 MB
# (its binaries stripped: scripts/package.sh).
deb_kib=$(( $(stat -c %s "$deb") / 1024 ))
installed_kib=$(dpkg-deb --field "$deb" Installed-Size)
echo "package: the .deb is $deb_kib KiB and installs $installed_kib KiB"
if [ "${package_flags[*]}" = --no-appimage ]; then
  [ "$deb_kib" -lt $((40 * 1024)) ] || fail "the .deb is $deb_kib KiB, over 40 MiB"
  [ "$installed_kib" -lt $((120 * 1024)) ] || fail "it installs $installed_kib KiB, over 120 MiB"
fi
[ "$(dpkg-deb --field "$deb" Package)" = "$PKG" ] || fail "package name"
depends=$(dpkg-deb --field "$deb" Depends)
for dep in libwebkit2gtk-4.1-0 libgtk-3-0 libayatana-appindicator3-1 libssl3; do
  [[ "$depends" == *"$dep"* ]] || fail "Depends lacks $dep: $depends"
done

if dpkg -s "$PKG" >/dev/null 2>&1; then
  echo "== package: removing $PKG left installed by an earlier run"
  $sudo_cmd apt-get remove -y -qq "$PKG"
fi

echo "== package: apt-get install ./$(basename "$deb")"
$sudo_cmd apt-get install -y -qq "$deb"
dpkg -s "$PKG" | grep -qx "Status: install ok installed" || fail "$PKG is not installed"

echo "== package: what it installed"
installed=$(dpkg -L "$PKG")
for file in /usr/bin/mandato-desk /usr/bin/mandato; do
  [ -x "$file" ] || fail "$file is missing or not executable"
  grep -qx "$file" <<<"$installed" || fail "$file does not belong to $PKG"
done
/usr/bin/mandato --version | grep -q "^mandato " || fail "mandato --version: $(/usr/bin/mandato --version)"
echo "package: $(/usr/bin/mandato --version) at /usr/bin/mandato"
entry=$(grep '^/usr/share/applications/.*\.desktop$' <<<"$installed" | head -n1)
[ "$entry" = /usr/share/applications/mandato-desk.desktop ] ||
  fail "the desktop entry is '$entry', not /usr/share/applications/mandato-desk.desktop"
for file in /usr/bin/mandato-desk /usr/bin/mandato; do
  # (`.debug_gdb_scripts`, a few loaded bytes naming Rust's pretty-printers, is not debug info.)
  ! readelf -SW "$file" | grep -qE '\.debug_(info|line|str|abbrev|ranges)[[:space:]]' ||
    fail "$file still carries debug info"
  readelf --string-dump=.gnu_debuglink "$file" | grep -q "$(basename "$file").debug" ||
    fail "$file does not name its debug file"
done
desktop-file-validate "$entry" || fail "the desktop entry $entry does not validate"
grep -qx "Name=Mandato Desk" "$entry" || fail "desktop entry name"
grep -q "^Comment=" "$entry" && grep -q "^Comment\[es\]=" "$entry" || fail "desktop entry comments"
grep -qx "Categories=Office;Finance;" "$entry" || fail "desktop entry categories"
grep -qx "Exec=mandato-desk" "$entry" || fail "desktop entry command: $(grep '^Exec=' "$entry")"
icon=$(sed -n 's/^Icon=//p' "$entry")
icons=$(grep "^/usr/share/icons/hicolor/.*/apps/$icon\.png$" <<<"$installed" || true)
[ -n "$icons" ] || fail "no icon named $icon"
for png in $icons; do
  [ -s "$png" ] || fail "empty icon $png"
done
echo "package: desktop entry $entry; icons: $(tr '\n' ' ' <<<"$icons")"

# The installed command line on a throwaway data directory: a database, a backup, restored.
scratch=$(mktemp -d /tmp/mandato-package-test.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
export HOME="$scratch/home"
mkdir -p "$HOME"
cli_data="$scratch/cli-data"
MANDATO_DATA_DIR="$cli_data" /usr/bin/mandato commerce list >/dev/null 2>>"$scratch/cli.log" ||
  fail "mandato commerce list: $(cat "$scratch/cli.log")"
MANDATO_DATA_DIR="$cli_data" /usr/bin/mandato backup "$scratch/manual.db" >/dev/null 2>>"$scratch/cli.log" ||
  fail "mandato backup: $(cat "$scratch/cli.log")"
MANDATO_DATA_DIR="$cli_data" /usr/bin/mandato restore "$scratch/manual.db" 2>>"$scratch/cli.log" | grep -q "^restored " ||
  fail "mandato restore"
ls "$cli_data" | grep -q '^mandato\.db\.replaced-' || fail "restore kept no replaced database"
echo "package: the installed mandato command line opens a database, backs it up and restores it"

echo "== package: the installed app in its window (Xvfb, tauri-driver; HOME=$HOME)"
export PATH="$cargo_bin:$PATH"
TAURI_DRIVER="$(command -v tauri-driver)"
export TAURI_DRIVER
# A release build always asks before a restore, in a dialog the test cannot answer: that step
# is the desktop test's (scripts/desktop-test.sh), on the debug build of the same code.
DESK_RESTORE=$desk_restore DESK_IDLE_SECONDS=2 xvfb-run -a -s "-screen 0 1280x800x24" \
  dbus-run-session -- node src-tauri/e2e/desk.mjs /usr/bin/mandato-desk

echo "== package: apt-get remove $PKG"
$sudo_cmd apt-get remove -y -qq "$PKG"
if dpkg -s "$PKG" 2>/dev/null | grep -qx "Status: install ok installed"; then
  fail "$PKG is still installed"
fi
for file in /usr/bin/mandato-desk /usr/bin/mandato "$entry"; do
  [ ! -e "$file" ] || fail "$file is still there after the removal"
done
echo "package: installed, checked, launched signed in, and removed: $(basename "$deb")"

#!/usr/bin/env bash
# Builds Mandato Desk's Linux installers with Tauri's bundler: a .deb, and an AppImage where
# its tools are at hand. Both hold the app (/usr/bin/mandato-desk), its icon, its desktop entry
# and the headless command line (/usr/bin/mandato), so `mandato backups`, `mandato restore FILE`
# and the rest work after the install. Always a release build: it is what merchants install,
# and only a release build carries the staff UI inside the binary (a debug build reads ui/dist
# from the build tree at run time, so its package would not stand on its own).
#
#   scripts/package.sh              the .deb (and the AppImage when its tools are installed)
#   scripts/package.sh --no-appimage  the .deb alone
#   scripts/package.sh --debug      a quick .deb of the debug builds, to check the bundling
#                                   itself; never for merchants (it needs this build tree's UI)
#
# The Tauri command line is the prebuilt one from npm, pinned in src-tauri/package.json; the
# bundles are made from the binaries cargo built here (`tauri bundle`). Prints the .deb's path
# on its last line. Safe to run any number of times.
set -euo pipefail
cd "$(dirname "$0")/.."
here="$(pwd)"

want_appimage=true
profile=release
for arg in "$@"; do
  case "$arg" in
    --no-appimage) want_appimage=false ;;
    --debug) profile=debug ;;
    *) echo "package: unknown option $arg" >&2; exit 2 ;;
  esac
done

scripts/setup.sh --desktop --package >&2

# The release engine embeds ui/dist when it is compiled: the UI is built first.
echo "== package: ui build" >&2
(cd ui && npm run build --silent) >&2

echo "== package: cargo build, $profile (mandato-desk and mandato)" >&2
started=$(date +%s)
if [ "$profile" = release ]; then
  cargo build --locked --release -p mandato -p mandato-desk --features mandato-desk/custom-protocol >&2
  bundle_flags=(--features custom-protocol)
else
  cargo build --locked -p mandato -p mandato-desk >&2
  bundle_flags=(--debug)
fi
echo "package: $profile build took $(($(date +%s) - started)) s" >&2

# tauri.conf.json's bundle.linux.*.files take the command line from here.
mkdir -p target/package
cp "target/$profile/mandato" target/package/mandato

bundles=deb
# Tauri's AppImage step runs linuxdeploy and its GTK and AppImage plugins, which it fetches from
# their GitHub releases into its cache; no package registry (Debian, npm, PyPI, crates.io)
# carries them. Where they are already in that cache, the AppImage is built too.
tools="${XDG_CACHE_HOME:-$HOME/.cache}/tauri"
if $want_appimage; then
  if [ -x "$tools/linuxdeploy-x86_64.AppImage" ] && [ -f "$tools/linuxdeploy-plugin-gtk.sh" ] &&
    compgen -G "$tools/linuxdeploy-plugin-appimage*.AppImage" >/dev/null; then
    bundles=deb,appimage
  else
    echo "package: AppImage skipped: it needs linuxdeploy, linuxdeploy-plugin-gtk and" \
      "linuxdeploy-plugin-appimage in $tools/, which Tauri downloads from GitHub and no" \
      "package registry provides; the .deb is built alone (README: Installing Mandato Desk)" >&2
  fi
fi

echo "== package: tauri bundle --bundles $bundles" >&2
rm -rf "target/$profile/bundle"
(cd src-tauri && npx --no-install tauri bundle --bundles "$bundles" "${bundle_flags[@]}" --no-sign --ci) >&2

# What merchants install carries no debug info: most of a release binary is its line tables
# and symbols (the .deb was 100 MB and installed 400 MB with them). Each packaged binary is
# stripped; what was stripped is kept in target/package/debug/NAME.debug, which the binary
# names (.gnu_debuglink) so that a debugger or a symbolizer given that file reads a crash's
# backtrace in full. The desktop entry takes the application's id as its file name (Tauri
# names it after the product, with a space). The package's checksums and installed size are
# then those of what it holds.
slim_deb() {
  local deb=$1 root bin name entry
  root=$(mktemp -d /tmp/mandato-deb.XXXXXX)
  dpkg-deb -R "$deb" "$root/pkg"
  mkdir -p target/package/debug
  for bin in "$root"/pkg/usr/bin/*; do
    name=$(basename "$bin")
    objcopy --only-keep-debug "$bin" "target/package/debug/$name.debug"
    strip --strip-all "$bin"
    objcopy --add-gnu-debuglink="target/package/debug/$name.debug" "$bin"
  done
  for entry in "$root"/pkg/usr/share/applications/*.desktop; do
    [ "$entry" = "$root/pkg/usr/share/applications/mandato-desk.desktop" ] ||
      mv "$entry" "$root/pkg/usr/share/applications/mandato-desk.desktop"
  done
  (cd "$root/pkg" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
    xargs -0 md5sum >DEBIAN/md5sums)
  sed -i "s/^Installed-Size: .*/Installed-Size: $(du -sk --exclude=DEBIAN "$root/pkg" | cut -f1)/" \
    "$root/pkg/DEBIAN/control"
  dpkg-deb --root-owner-group -Zxz --build "$root/pkg" "$deb" >/dev/null
  rm -rf "$root"
}

# A plain file name (Tauri's carries the product name's space) under target/package/.
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' src-tauri/Cargo.toml | head -n1)
deb="$here/target/package/mandato-desk_${version}_amd64.deb"
cp "target/$profile"/bundle/deb/*.deb "$deb"
slim_deb "$deb"
if [[ "$bundles" == *appimage* ]]; then
  cp "target/$profile"/bundle/appimage/*.AppImage "$here/target/package/mandato-desk_${version}_amd64.AppImage"
fi
echo "package: $(du -h "$deb" | cut -f1), installs $(dpkg-deb --field "$deb" Installed-Size) KiB;" \
  "$(dpkg-deb --field "$deb" Package Version Architecture | tr '\n' ' ')" >&2
echo "$deb"

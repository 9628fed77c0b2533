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
if [ "$profile" = release ]; then
  cp target/release/mandato target/package/mandato
else
  # Most of a debug binary is its debug info, which the quick package has no use for.
  strip --strip-debug -o target/package/mandato target/debug/mandato
fi

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

# A plain file name (Tauri's carries the product name's space) under target/package/.
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' src-tauri/Cargo.toml | head -n1)
deb="$here/target/package/mandato-desk_${version}_amd64.deb"
cp "target/$profile"/bundle/deb/*.deb "$deb"
if [[ "$bundles" == *appimage* ]]; then
  cp "target/$profile"/bundle/appimage/*.AppImage "$here/target/package/mandato-desk_${version}_amd64.AppImage"
fi
echo "package: $(du -h "$deb" | cut -f1) $(dpkg-deb --field "$deb" Package Version Architecture | tr '\n' ' ')" >&2
echo "$deb"

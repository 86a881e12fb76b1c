#!/usr/bin/env bash
# Builds the SystemC that `make test-sanitize` links against: Debian's SystemC 2.3.4 source (the
# same release and configure layout as the libsystemc-dev package tessel otherwise uses), patched
# with AddressSanitizer fiber annotations and built with -fsanitize=address.
#
#   scripts/systemc/build_asan.sh PREFIX   installs into PREFIX (lib/, include/, lib/cmake/: the
#                                          CMake package tessel's TESSEL_SYSTEMC_PREFIX finds)
#
# Why: SystemC runs every SC_THREAD on a QuickThreads coroutine stack. SystemC 2.3.4 (Debian's
# libsystemc too) tells ASan of its stack switches (weak __sanitizer_start_switch_fiber calls) but
# gets three things wrong: a switch to the main coroutine is announced as a stack of size 0, abort()
# (a thread's end) is not announced at all, and a coroutine stack is unmapped with the poison of its
# dead frames still in the shadow, which the next stack mapped at that address inherits. So in an
# ASan build ASan soon runs with the wrong stack bounds: "ASan is ignoring requested
# __asan_handle_no_return" and "AddressSanitizer: CHECK failed: asan_thread.cpp:371" on the first
# throw, or false "stack-use-after-scope" reports on the second simulation of a process
# (google/sanitizers#189). asan-fiber-annotations.patch (next to this script, sc_cor_qt.cpp/.h
# only) fixes all three, and keeps each coroutine's fake stack, so that ASan checks coroutine
# stacks as it checks thread stacks; nothing is suppressed.
#
# The source comes from Debian's archive (deb.debian.org, the package's orig tarball, checked against
# the SHA-256 of its signed .dsc) and is cached in PREFIX/../systemc-src/. Does nothing when PREFIX
# already holds a library built from this script's current patch. Takes about 3 minutes of 2 cores.
set -euo pipefail

prefix=${1:?usage: $0 PREFIX}
here="$(cd "$(dirname "$0")" && pwd)"
patch_file="$here/asan-fiber-annotations.patch"
version=2.3.4
tarball=systemc_${version}.orig.tar.gz
sha256=83ef55e30cf18b02f9405c9252c86f3b34e0b96be051c0def9fc8e57a0653dfb
url=http://deb.debian.org/debian/pool/main/s/systemc/$tarball

mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"
stamp="$prefix/.built-from"
want="$version $(sha256sum "$patch_file" "$0" | cut -c1-16 | tr '\n' ' ')"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$prefix/lib/cmake/SystemCLanguage/SystemCLanguageConfig.cmake" ]; then
  exit 0
fi

src_root="$(dirname "$prefix")/systemc-src"
mkdir -p "$src_root"
if ! echo "$sha256  $src_root/$tarball" | sha256sum -c --quiet - > /dev/null 2>&1; then
  echo "[systemc] downloading $url"
  curl -sSfL --retry 3 -o "$src_root/$tarball.part" "$url"
  mv "$src_root/$tarball.part" "$src_root/$tarball"
  echo "$sha256  $src_root/$tarball" | sha256sum -c --quiet -
fi

work="$src_root/build"
rm -rf "$work" && mkdir -p "$work"
tar xzf "$src_root/$tarball" -C "$work"
cd "$work/systemc-$version"
patch -p1 --quiet < "$patch_file"
echo "[systemc] building SystemC $version with ASan fiber annotations into $prefix"
# SystemC's CMake build (the orig tarball has no generated autotools files; Debian runs autoreconf):
# its defaults, gcc's default C++17 as in Debian's build, a shared library.
# ASan only, not UBSan: tessel's sanitizer build checks tessel's code for undefined behaviour;
# SystemC's own is not ours to fix.
cmake -S . -B "$work/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_STANDARD=17 \
  -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DCMAKE_CXX_FLAGS="-fsanitize=address -fno-omit-frame-pointer" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address" > "$work/configure.log"
cmake --build "$work/build" -j "${JOBS:-2}" > "$work/make.log"
rm -rf "$prefix/lib" "$prefix/include"
cmake --install "$work/build" > "$work/install.log"
echo "$want" > "$stamp"
echo "[systemc] installed $(ls "$prefix"/lib/libsystemc.so.*.*.*)"

#!/usr/bin/env bash
# Builds the SystemC that `make test-sanitize` links against: Debian's SystemC 2.3.4 source (the
# same release and configure layout as the libsystemc-dev package tessel otherwise uses), patched
# with AddressSanitizer fiber annotations and built with -fsanitize=address.
#
#   scripts/systemc/build_asan.sh PREFIX   installs into PREFIX (lib/, include/, lib/cmake/: the
#                                          CMake package tessel's TESSEL_SYSTEMC_PREFIX finds)
#
# Why: SystemC runs every SC_THREAD on a QuickThreads coroutine stack that ASan does not know about.
# Debian's libsystemc has no annotations, so in an ASan build each exception thrown on a coroutine
# stack (SystemC's own sc_unwind_exception when threads are killed, tessel's errors) leaves stale
# stack poison that __asan_handle_no_return cannot clear, and the next report or no-return call ends
# in a false report or "AddressSanitizer: CHECK failed: asan_thread.cpp:371" (google/sanitizers#189).
# asan-fiber-annotations.patch (next to this script) tells ASan of every switch in sc_cor_qt.cpp
# (__sanitizer_start_switch_fiber / __sanitizer_finish_switch_fiber), so ASan checks coroutine
# stacks as it checks thread stacks.
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

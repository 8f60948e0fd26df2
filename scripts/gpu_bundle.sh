#!/usr/bin/env bash
# Prepares .gpu-bundle/: the Debian 12 packages that scripts/gpu_check.sh
# unpacks (dpkg -x, into the repository, never into /) and builds against on
# a GPU machine that has none of this project's third-party libraries and
# cannot download anything. Run it here (Debian 12, as root), then carry
# .gpu-bundle to that machine with the working tree (bench/README.md,
# "GPU check").
#
# What is carried, and why:
# - the -dev packages that CMake's find_package calls need (headers, CMake
#   and pkg-config files, the .so links; see CMakeLists.txt,
#   observe/CMakeLists.txt), plus libgloo-dev: the
#   PyPI torch wheel includes <gloo/...> from its ProcessGroupGloo.hpp but
#   does not ship those headers;
# - the shared libraries the built binaries load and their own
#   dependencies, down to the C/C++ runtime (libc, libm, libstdc++,
#   libgcc_s), which must come from the GPU machine itself. The list was
#   read off readelf -d of the libraries and checked below: every NEEDED
#   library of every carried .so is carried or is that runtime.
# Not carried: LibTorch, CUDA and NCCL (the GPU machine's own torch wheel
# and CUDA toolkit are used), pkg-config (the one CMake lookup that uses it,
# cppzmq's FindZeroMQ, falls back to find_path/find_library), the static
# archives' own dependencies (libzmq3-dev's libsodium-dev, libkrb5-dev, ...:
# nothing here links libzmq statically) and googletest's sources.
#
# Idempotent: a package whose candidate version is already in
# .gpu-bundle/debs/ is not downloaded again; stale versions and packages no
# longer listed are removed. apt-get update runs only when a package has no
# candidate or a download fails. Writes .gpu-bundle/MANIFEST (packages,
# versions, sizes, the newest glibc/libstdc++ symbol versions the libraries
# need). Fails if the .debs exceed RLSWARM_GPU_BUNDLE_MAX_MIB (48): the
# working tree plus everything carried must stay under 64 MiB.
#
# Usage: scripts/gpu_bundle.sh
set -euo pipefail
cd "$(dirname "$0")/.."

max_mib=${RLSWARM_GPU_BUNDLE_MAX_MIB:-48}
bundle=.gpu-bundle
debs=$bundle/debs

dev_packages=(
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev
  libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  # libboost-dev / libboost-filesystem-dev are empty metapackages over these.
  libboost1.74-dev libboost-filesystem1.74-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # FindPNG needs ZLIB (headers and libz.so) as well.
  libpng-dev zlib1g-dev libprotobuf-dev
  # cairo's header and libcairo.so link (observe/CMakeLists.txt finds them
  # by path when its pkg-config dependencies are missing), giflib's.
  libcairo2-dev libgif-dev
  libgloo-dev
)
runtime_packages=(
  # libzmq.so.5 and what it loads: sodium (CURVE), pgm, norm, bsd (+md),
  # GSSAPI (krb5 and its support libraries).
  libzmq5 libsodium23 libpgm-5.3-0 libnorm1 libbsd0 libmd0
  libgssapi-krb5-2 libkrb5-3 libk5crypto3 libkrb5support0 libcom-err2 libkeyutils1
  libyaml-cpp0.7 libspdlog1.10 libfmt9 libboost-filesystem1.74.0
  libbenchmark1debian libpng16-16 zlib1g libprotobuf32 libprotobuf-lite32
  # libcairo.so.2 and what it loads: pixman, fontconfig (expat, and the
  # freetype it shares with cairo, with brotli), X11/XCB (Xau, Xdmcp,
  # Xext, Xrender, xcb-render, xcb-shm); libgif.so.7 needs only libc.
  libcairo2 libpixman-1-0 libfontconfig1 libexpat1 libfreetype6 libbrotli1
  libx11-6 libxcb1 libxau6 libxdmcp6 libxext6 libxrender1 libxcb-render0 libxcb-shm0
  libgif7
)
packages=("${dev_packages[@]}" "${runtime_packages[@]}")

# The C/C++ runtime: taken from the GPU machine, so not carried and allowed
# as NEEDED entries below.
runtime_sonames='^(libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|libresolv\.so\.2|ld-linux-x86-64\.so\.2|libstdc\+\+\.so\.6|libgcc_s\.so\.1)$'

die() { echo "gpu_bundle: $*" >&2; exit 1; }
[ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ] || die "needs a Debian amd64 machine (apt-get, dpkg)"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || die "run as root"
  sudo_cmd=(sudo)
fi
for tool in apt-get apt-cache dpkg-deb readelf; do
  command -v "$tool" >/dev/null || die "needs $tool"
done

# candidates PKG...: "PKG VERSION" lines ("(none)" without one), one apt-cache call.
candidates() {
  apt-cache policy "$@" 2>/dev/null |
    awk '/^[^ ].*:$/ {pkg = substr($0, 1, length($0) - 1)} /^  Candidate:/ {print pkg, $2}'
}
# apt-get download names a file PKG_VERSION_ARCH.deb with the epoch's ':' as %3a.
deb_glob() { local v=${2//:/%3a}; echo "$debs/${1}_${v}_"; }

updated=0
apt_update() {
  [ $updated -eq 1 ] && return 0
  echo "gpu_bundle: apt-get update"
  "${sudo_cmd[@]}" apt-get update -qq
  updated=1
}

mkdir -p "$debs"
declare -A version=()
read_candidates() {
  version=()
  local pkg v
  while read -r pkg v; do [ "$v" = "(none)" ] || version[$pkg]=$v; done < <(candidates "${packages[@]}")
  for pkg in "${packages[@]}"; do [ -n "${version[$pkg]:-}" ] || return 1; done
}
if ! read_candidates; then
  apt_update
  read_candidates || die "no candidate version for: $(for p in "${packages[@]}"; do
    [ -n "${version[$p]:-}" ] || printf '%s ' "$p"; done)"
fi

# Remove what is not wanted (stale versions, packages no longer listed).
shopt -s nullglob
for f in "$debs"/*.deb; do
  name=$(basename "$f"); pkg=${name%%_*}
  if [ -z "${version[$pkg]:-}" ] || [[ "$f" != "$(deb_glob "$pkg" "${version[$pkg]}")"* ]]; then
    echo "gpu_bundle: removing $name"
    rm -f "$f"
  fi
done

missing=()
for pkg in "${packages[@]}"; do
  files=("$(deb_glob "$pkg" "${version[$pkg]}")"*.deb)
  [ ${#files[@]} -gt 0 ] || missing+=("$pkg=${version[$pkg]}")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "gpu_bundle: downloading ${#missing[@]} package(s)"
  # As root apt downloads as the _apt user, which cannot write here.
  if ! (cd "$debs" && apt-get download -qq -o APT::Sandbox::User=root "${missing[@]}"); then
    apt_update
    (cd "$debs" && apt-get download -qq -o APT::Sandbox::User=root "${missing[@]}") ||
      die "apt-get download failed"
  fi
else
  echo "gpu_bundle: all ${#packages[@]} packages already in $debs"
fi

# Check: each listed package is there exactly once, and every NEEDED library
# of every carried shared object is carried or is the C/C++ runtime.
for pkg in "${packages[@]}"; do
  files=("$debs/${pkg}_"*.deb)
  [ ${#files[@]} -eq 1 ] || die "expected one .deb for $pkg in $debs, found ${#files[@]}"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in "$debs"/*.deb; do dpkg-deb -x "$f" "$tmp"; done
# The libraries in the library directories (not dlopen()ed plugins such as
# krb5's, which nothing here loads).
mapfile -t objects < <(find "$tmp"/usr/lib/x86_64-linux-gnu "$tmp"/lib/x86_64-linux-gnu \
                         -maxdepth 1 -type f -name '*.so*' 2>/dev/null | sort)
[ ${#objects[@]} -gt 0 ] || die "no shared objects unpacked"
declare -A carried=()
for o in "${objects[@]}"; do
  soname=$(readelf -d "$o" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ -n "$soname" ] && carried[$soname]=1
done
unresolved=()
for o in "${objects[@]}"; do
  while read -r needed; do
    [[ "$needed" =~ $runtime_sonames ]] && continue
    [ -n "${carried[$needed]:-}" ] || unresolved+=("${o#"$tmp"}: $needed")
  done < <(readelf -d "$o" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
done
[ ${#unresolved[@]} -eq 0 ] || die "libraries not carried: ${unresolved[*]}"
# The newest symbol versions of the C/C++ runtime the carried libraries and
# static archives need: the GPU machine must have at least these.
max_version() {  # PREFIX: newest PREFIX_x.y[.z] referenced by the carried objects
  {
    for o in "${objects[@]}"; do readelf -V "$o" 2>/dev/null; done
    find "$tmp" -type f -name '*.a' -exec readelf -s {} + 2>/dev/null
  } | grep -o "${1}_[0-9][0-9.]*[0-9]" | sed "s/^${1}_//" | sort -uV | tail -1
}
glibc_needed=$(max_version GLIBC)
glibcxx_needed=$(max_version GLIBCXX)
cxxabi_needed=$(max_version CXXABI)

total=0
{
  echo "# rlswarm GPU bundle: Debian packages for scripts/gpu_check.sh"
  echo "built_on: $(. /etc/os-release && echo "$PRETTY_NAME") $(dpkg --print-architecture), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "needs_glibc: $glibc_needed"
  echo "needs_glibcxx: $glibcxx_needed"
  echo "needs_cxxabi: $cxxabi_needed"
  echo "packages:"
  for pkg in "${packages[@]}"; do
    f=("$debs/${pkg}_"*.deb)
    size=$(stat -c %s "${f[0]}")
    total=$((total + size))
    printf '  %-30s %-28s %9d\n' "$pkg" "${version[$pkg]}" "$size"
  done
} > "$bundle/MANIFEST.tmp"
# Keep the old MANIFEST (and its date) when nothing else changed, so that an
# unchanged bundle is not unpacked again by gpu_check.sh.
if [ -f "$bundle/MANIFEST" ] &&
   diff -q <(grep -v '^built_on:' "$bundle/MANIFEST") <(grep -v '^built_on:' "$bundle/MANIFEST.tmp") >/dev/null; then
  rm -f "$bundle/MANIFEST.tmp"
else
  mv "$bundle/MANIFEST.tmp" "$bundle/MANIFEST"
fi

mib() { awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }
bundle_kib=$(du -sk "$bundle" | cut -f1)
tree_kib=$(git ls-files -z --cached --others --exclude-standard 2>/dev/null |
             du -skc --files0-from=- 2>/dev/null | tail -1 | cut -f1 || echo 0)
echo "gpu_bundle: ${#packages[@]} packages, $(mib $((total / 1024))) of .debs; $bundle: $(mib "$bundle_kib")"
echo "gpu_bundle: carried with the working tree ($(mib "$tree_kib")): $(mib $((bundle_kib + tree_kib))) of the 64 MiB limit"
echo "gpu_bundle: the libraries need glibc >= $glibc_needed and libstdc++ with GLIBCXX_$glibcxx_needed / CXXABI_$cxxabi_needed"
if [ $total -gt $((max_mib * 1024 * 1024)) ]; then
  die "the .debs take $((total / 1024 / 1024)) MiB, over the $max_mib MiB limit (the working tree plus all carried folders must stay under 64 MiB)"
fi

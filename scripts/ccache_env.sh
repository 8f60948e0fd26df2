# Sourced by the build scripts: ccache settings that let a fresh clone (CI
# builds in one) hit what earlier builds on this machine cached. Paths are
# hashed relative to the repository, and precompiled headers are cacheable
# only with this sloppiness.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-10G}

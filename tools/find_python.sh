#!/bin/sh
# Find a Python interpreter the course supports; print its path (nothing, and exit 1, if none).
#
#   tools/find_python.sh                 the newest supported Python found
#   tools/find_python.sh --min 3.12      the newest supported Python >= 3.12 found
#   tools/find_python.sh --prefer 3.11   Python 3.11 if found, else the newest supported found
#   tools/find_python.sh --exact 3.12    Python 3.12 only
#   tools/find_python.sh --supported     the supported versions, one a line
#   tools/find_python.sh --version PY    PY's major.minor (exit 1 if PY does not run)
#   tools/find_python.sh --check VAR PY  nothing if PY runs and has a lock; else why not, for the make
#                                        variable VAR that named it (PYTHON, NEWEST_PYTHON), and exit 1
#
# Supported = a lock exists for it: requirements/pyXY.txt (made by `make lock`), the one list.
# Looked at, in this order: python3.X and python3 on PATH, then pyenv's versions/3.X.*/bin/python3.X
# (pyenv's shims on PATH only run the versions pyenv has selected, so each candidate is run
# once to see that it works and really is 3.X). POSIX sh: it runs before any venv exists.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)

supported() {
    for lock in "$here"/requirements/py3*.txt; do
        [ -f "$lock" ] || continue
        v=$(basename "$lock" .txt); v=${v#py3}
        echo "3.$v"
    done | sort -t. -k2,2n
}

version_of() {  # major.minor of interpreter $1, or nothing
    "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null
}

find_exact() {  # first working interpreter of version $1, as its real path (not a shim)
    want=$1
    for cand in $(command -v "python$want" python3 2>/dev/null) \
                $(ls -d "$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-$HOME/.pyenv}")"/versions/"$want".*/bin/python"$want" 2>/dev/null | sort -r); do
        if [ "$(version_of "$cand")" = "$want" ]; then
            "$cand" -c 'import sys; print(sys.executable)'; return 0
        fi
    done
    return 1
}

newest_from() {  # newest supported version >= $1 that is found
    min=${1#3.}
    for v in $(supported | sort -t. -k2,2nr); do
        [ "${v#3.}" -ge "$min" ] || continue
        find_exact "$v" && return 0
    done
    return 1
}

check() {  # $1: the make variable, $2: its value
    list=$(supported | tr '\n' ' ' | sed 's/ $//')
    if [ -z "$2" ]; then
        echo "No supported Python found: looked on PATH and under pyenv for Python $list. Install one, or set $1=/path/to/python3.X." >&2; return 1
    fi
    v=$(version_of "$2") || v=""
    if [ -z "$v" ]; then
        echo "$1=$2 does not run (not found, or a pyenv shim of a Python pyenv has not selected). Set $1=/path/to/python3.X, one of Python $list." >&2; return 1
    fi
    if [ ! -f "$here/requirements/py$(echo "$v" | tr -d .).txt" ]; then
        echo "Python $v ($1=$2) is not supported: this course has a tested lock for Python $list only (requirements/pyXY.txt). Set $1=/path/to/python3.X for one of those." >&2; return 1
    fi
}

case "${1:-}" in
    "")          newest_from 3.0 ;;
    --min)       newest_from "$2" ;;
    --prefer)    find_exact "$2" || newest_from 3.0 ;;
    --exact)     find_exact "$2" ;;
    --supported) supported ;;
    --version)   version_of "$2" ;;
    --check)     check "$2" "${3:-}" ;;
    *)           echo "usage: $0 [--min 3.X | --prefer 3.X | --exact 3.X | --supported | --version PY | --check VAR PY]" >&2; exit 2 ;;
esac

#!/bin/sh
# Lint colmet's man pages and check that they match the programs' --help.
#
# usage: lint.sh [BIN_DIR | PROGRAM]...
#
#   1. mandoc -T lint -W warning on every page in this directory;
#   2. groff -man -ww -z on every page, when groff is installed;
#   3. for each program (colmet-node, colmet-collector, colmet-job, colmet-ctl, ... found in
#      BIN_DIR, or PROGRAM given by path): every long option its --help
#      prints (and the --help of each of its subcommands) must appear in its
#      page <program>.<section> of this directory, and every long option the
#      page's OPTIONS section describes must be one the program knows.
#      A program that is not there is skipped with a message.
#
# Any output of mandoc or groff, or any mismatch, fails (exit 1). Exit 77
# (the CTest skip code) when mandoc is not installed.
set -u

man_dir=$(cd "$(dirname "$0")" && pwd)
programs="colmet-node colmet-collector colmet-job colmet-ctl colmet-keygen colmet-report colmet-mail-summary"
status=0

fail() {
    printf 'FAIL: %s\n' "$*"
    status=1
}

if ! command -v mandoc >/dev/null 2>&1; then
    echo "SKIP: mandoc is not installed"
    exit 77
fi

pages=$(find "$man_dir" -maxdepth 1 -type f -name '*.[1-9]' | sort)
if [ -z "$pages" ]; then
    fail "no man page in $man_dir"
    exit 1
fi

# 1 and 2: formatter warnings.
for page in $pages; do
    name=$(basename "$page")
    out=$(mandoc -T lint -W warning "$page" 2>&1)
    if [ -n "$out" ]; then
        fail "mandoc: $name"
        printf '%s\n' "$out"
    fi
    if command -v groff >/dev/null 2>&1; then
        out=$(groff -man -ww -z "$page" 2>&1)
        if [ -n "$out" ]; then
            fail "groff: $name"
            printf '%s\n' "$out"
        fi
    fi
done
command -v groff >/dev/null 2>&1 || echo "note: groff is not installed; only mandoc checked the pages"

# The long options in a CLI11 help text: the first column of the lines that
# start with blanks and a dash ("  -s,--sample-period FLOAT ..." gives
# --sample-period; "  -c,--config=/etc/..." gives --config).
help_options() {
    sed -n 's/^ \{1,\}\(-[^ =]*\).*/\1/p' | tr ',' '\n' | grep -E '^--[a-z0-9][A-Za-z0-9-]*$' | sort -u
}

# The subcommands a CLI11 help text lists under "Subcommands:".
help_subcommands() {
    awk '/^Subcommands:/ { on = 1; next } on && /^[^ ]/ { on = 0 } on && NF { print $1 }'
}

# A page's source with roff's escaped dashes made plain.
page_text() {
    sed -e 's/\\-/-/g' -e 's/\\(hy/-/g' "$1"
}

# The long options a page's OPTIONS section describes: the first long option
# on the line after each .TP there.
page_options() {
    page_text "$1" | awk '
        /^\.SH/ { in_options = ($0 ~ /^\.SH +"?OPTIONS"?$/); next }
        in_options && /^\.TP/ { tag = 1; next }
        in_options && tag { tag = 0; print }
    ' | grep -oE -- '--[a-z0-9][A-Za-z0-9-]*' | sort -u
}

check_program() {
    prog=$1
    name=$(basename "$prog")
    page=$(find "$man_dir" -maxdepth 1 -type f -name "$name.[1-9]" | head -n 1)
    if [ -z "$page" ]; then
        fail "$name: no man page $name.<section> in $man_dir"
        return
    fi
    if ! help=$("$prog" --help 2>&1); then
        fail "$name --help failed"
        printf '%s\n' "$help"
        return
    fi
    known=$(printf '%s\n' "$help" | help_options)
    for sub in $(printf '%s\n' "$help" | help_subcommands); do
        if ! sub_help=$("$prog" "$sub" --help 2>&1); then
            fail "$name $sub --help failed"
            printf '%s\n' "$sub_help"
            continue
        fi
        known=$(printf '%s\n%s\n' "$known" "$(printf '%s\n' "$sub_help" | help_options)" | sort -u)
    done
    if [ -z "$known" ]; then
        fail "$name --help lists no long option"
        return
    fi
    page_text "$page" >"$tmp/page"
    for opt in $known; do
        if ! grep -qE -- "(^|[^A-Za-z0-9-])$opt([^A-Za-z0-9-]|\$)" "$tmp/page"; then
            fail "$name: $opt is in --help but not in $(basename "$page")"
        fi
    done
    for opt in $(page_options "$page"); do
        if ! printf '%s\n' "$known" | grep -qxF -- "$opt"; then
            fail "$name: $(basename "$page") describes $opt, which --help does not list"
        fi
    done
    echo "checked: $name --help against $(basename "$page") ($(printf '%s\n' "$known" | wc -l) long options)"
}

# 3: --help against the pages.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for arg in "$@"; do
    if [ -d "$arg" ]; then
        for p in $programs; do
            if [ -x "$arg/$p" ]; then
                check_program "$arg/$p"
            else
                echo "skip: $arg/$p is not built; its options were not checked"
            fi
        done
    elif [ -x "$arg" ]; then
        check_program "$arg"
    else
        echo "skip: $arg does not exist; its options were not checked"
    fi
done
[ $# -eq 0 ] && echo "note: no program or build directory given; options were not checked"

if [ "$status" -eq 0 ]; then
    echo "man pages: OK ($(printf '%s\n' "$pages" | wc -l) pages)"
fi
exit "$status"

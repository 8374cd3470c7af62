#!/bin/bash
# sleep, as a sandbox of sandproof's linux runtime sees it: bound over /usr/bin/sleep (docs/runtime.md).
# Under the mock's manual clock it waits for the mock's virtual time, so that one advance that crosses its
# deadline releases it at once; under any other mode it is the real sleep. The mock writes its clock to
# /.sandproof/clock as "MODE NOW_MS" after every set. Anything this script cannot read (no clock file,
# "infinity", an option) goes to the real sleep unchanged.
real=/.sandproof/sleep.real
clock=/.sandproof/clock
name=${0##*/}

# NUMBER[smhd] -> milliseconds on stdout; fails on anything else.
millis() {
    n=$1
    unit=1000
    case $n in
    *s) n=${n%s} ;;
    *m) n=${n%m}; unit=60000 ;;
    *h) n=${n%h}; unit=3600000 ;;
    *d) n=${n%d}; unit=86400000 ;;
    esac
    case $n in
    '' | . | *[!0-9.]* | *.*.*) return 1 ;;
    esac
    whole=${n%%.*}
    frac=
    case $n in *.*) frac=${n#*.} ;; esac
    whole=${whole#"${whole%%[!0]*}"}
    frac="${frac}000"
    frac=${frac%"${frac#???}"}
    echo $(( ${whole:-0} * unit + (1$frac - 1000) * unit / 1000 ))
}

[ $# -gt 0 ] && [ -r "$clock" ] && read -r mode now < "$clock" || exec -a "$name" "$real" "$@"
[ "$mode" = manual ] || exec -a "$name" "$real" "$@"
total=0
for arg in "$@"; do
    ms=$(millis "$arg") || exec -a "$name" "$real" "$@"
    total=$((total + ms))
done
deadline=$((now + total))
while :; do
    read -r mode now < "$clock" || exec -a "$name" "$real" "$@"
    left=$((deadline - now))
    [ "$left" -gt 0 ] || exit 0
    if [ "$mode" != manual ]; then
        exec -a "$name" "$real" "$((left / 1000)).$(printf '%03d' $((left % 1000)))"
    fi
    "$real" 0.02
done

# sandbox-console reuse-mode cleanup (sh -c <this>), run as the program's user between runs:
# kills every process except init (PID 1) and the container's idle command (the oldest other
# process), empties /workspace and /tmp, and prints "clean" only if nothing is left.
keeper=
for d in /proc/[0-9]*; do
  p=${d#/proc/}
  [ "$p" -gt 1 ] || continue
  [ "$p" = $$ ] && continue
  if [ -z "$keeper" ] || [ "$p" -lt "$keeper" ]; then keeper=$p; fi
done
for round in 1 2 3 4 5; do
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$p" = 1 ] || [ "$p" = "$keeper" ] || [ "$p" = $$ ] || kill -9 "$p" 2>/dev/null
  done
done
rm -rf /workspace/* /workspace/.[!.]* /workspace/..?* /tmp/* /tmp/.[!.]* /tmp/..?* 2>/dev/null
left=
for d in /proc/[0-9]*; do
  p=${d#/proc/}
  [ "$p" = 1 ] || [ "$p" = "$keeper" ] || [ "$p" = $$ ] || left="$left $p"
done
for f in /workspace/* /workspace/.[!.]* /workspace/..?* /tmp/* /tmp/.[!.]* /tmp/..?*; do
  [ -e "$f" ] || [ -L "$f" ] && left="$left $f"
done
if [ -z "$left" ]; then echo clean; else echo "left:$left"; fi

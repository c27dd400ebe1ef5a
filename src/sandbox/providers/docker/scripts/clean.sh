# sandbox-console reuse-mode cleanup (sh -c <this>), run as the program's user between runs.
# Prints "clean" only when it could verify that nothing of the last run is left; anything else
# ("left: ...") makes the console replace the container instead of reusing it.
#  1. Kills every process except init (PID 1) and the container's idle command (the oldest
#     other process; both run as another uid), until a whole scan finds none: with them go
#     their timers, pipes, ptys and abstract unix sockets. Only then is anything wiped.
#  2. Empties every mount the run's user can write to (/workspace, /tmp, /dev/shm with the
#     POSIX shared memory and semaphores, /dev/mqueue with the POSIX message queues, and any
#     other writable mount an image adds), whatever names the files have.
#  3. Removes System V IPC objects (ipcrm, when the image has it) and checks that none is
#     left in /proc/sysvipc; without /proc/sysvipc (gVisor) they cannot be checked, so the
#     container is not reused.
#  4. Checks /proc/net/unix for sockets still bound (none may outlive the processes).
keeper=
for d in /proc/[0-9]*; do
  p=${d#/proc/}
  [ "$p" -gt 1 ] || continue
  [ "$p" = $$ ] && continue
  if [ -z "$keeper" ] || [ "$p" -lt "$keeper" ]; then keeper=$p; fi
done
# Kill until one whole scan finds nothing but init, the keeper and this script: a process
# forked after a scan would otherwise live on and write again after the wipe. Killed
# processes stay in /proc until init reaps them, so a few rounds may see them still.
left=
stable=
for round in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
  alive=
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    if [ "$p" != 1 ] && [ "$p" != "$keeper" ] && [ "$p" != $$ ]; then
      alive=1
      kill -9 "$p" 2>/dev/null
    fi
  done
  if [ -z "$alive" ]; then stable=1; break; fi
  sleep 0.05
done
[ -n "$stable" ] || left="$left processes-keep-coming"

# Writable mounts: read-write, not a kernel interface, and writable by this user.
places=
while read -r _dev mnt type opts _rest; do
  case "$type" in proc|sysfs|devpts|cgroup|cgroup2) continue ;; esac
  case ",$opts," in *,rw,*) ;; *) continue ;; esac
  [ -d "$mnt" ] && [ -w "$mnt" ] && places="$places $mnt"
done < /proc/self/mounts
for place in $places; do
  rm -rf "$place"/* "$place"/.[!.]* "$place"/..?* 2>/dev/null
  for f in "$place"/* "$place"/.[!.]* "$place"/..?*; do
    { [ -e "$f" ] || [ -L "$f" ]; } && left="$left file:$f"
  done
done

if command -v ipcrm >/dev/null 2>&1; then ipcrm -a 2>/dev/null; fi
if [ -r /proc/sysvipc/shm ] && [ -r /proc/sysvipc/sem ] && [ -r /proc/sysvipc/msg ]; then
  for kind in shm sem msg; do
    n=0
    while read -r _line; do n=$((n + 1)); done < /proc/sysvipc/$kind
    [ "$n" -le 1 ] || left="$left sysv-$kind"
  done
else
  left="$left sysv-unverifiable"
fi

# Nothing may have come back while the mounts were emptied.
for d in /proc/[0-9]*; do
  p=${d#/proc/}
  [ "$p" = 1 ] || [ "$p" = "$keeper" ] || [ "$p" = $$ ] || left="$left process:$p"
done

if [ -r /proc/net/unix ]; then
  n=0
  while read -r _line; do n=$((n + 1)); done < /proc/net/unix
  [ "$n" -le 1 ] || left="$left unix-sockets"
fi

if [ -z "$left" ]; then echo clean; else echo "left:$left"; fi

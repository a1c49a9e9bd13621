#!/usr/bin/env bash
# Stop the local test Slurm that deploy/local-slurm/start.sh started: only the daemons
# listed in /run/local-slurm/started, dependents first (slurmd, slurmctld, slurmdbd,
# mariadbd, munged). Each is stopped by its pid file: start-stop-daemon signals the
# pid in the file only while it still runs the recorded executable (TERM, then KILL
# after 30 s). A daemon that was already running when start.sh ran is not listed and
# is never stopped. /run/local-slurm/env is removed, so the slurm suite skips instead
# of failing against a stopped cluster.
#
# Jobs still queued or running are cancelled through Slurm first, so that no job
# outlives its slurmd; LOCAL_SLURM_KEEP_JOBS=1 keeps them (slurmctld saves them and
# they carry on after the next start.sh).
#
# Safe to run again: with nothing listed it says so and exits 0. stdout: one line,
# "local-slurm: stopped ..."; exit 1 when a listed daemon would not stop.
set -euo pipefail
exec </dev/null
export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}"

RUN_DIR=/run/local-slurm
STARTED=$RUN_DIR/started
ENV_FILE=$RUN_DIR/env
STOP_ORDER=(slurmd slurmctld slurmdbd mariadbd munged)

T0_US=${EPOCHREALTIME//[^0-9]/}
elapsed() {
    local us=$(( ${EPOCHREALTIME//[^0-9]/} - T0_US ))
    printf '%d.%d' $(( us / 1000000 )) $(( us % 1000000 / 100000 ))
}

[ "$(id -u)" -eq 0 ] || { echo "local-slurm: error: must run as root: sudo bash $0" >&2; exit 1; }
if [ ! -s "$STARTED" ]; then
    echo "local-slurm: nothing to stop ($STARTED lists no daemon)"
    exit 0
fi
exec 9>"$RUN_DIR/lock"
flock -w 300 9 || { echo "local-slurm: error: another start.sh or stop.sh holds $RUN_DIR/lock" >&2; exit 1; }

queued_jobs() { timeout 10 squeue --noheader --all -o '%A' 2>/dev/null | sort -u; }

cancel_jobs() {
    [ "${LOCAL_SLURM_KEEP_JOBS:-0}" != 1 ] || return 0
    grep -q '^slurmctld ' "$STARTED" || return 0
    timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP' || return 0
    local jobs
    jobs=$(queued_jobs | tr '\n' ' ')
    [ -n "${jobs// /}" ] || return 0
    echo "local-slurm: cancelling jobs $jobs" >&2
    # shellcheck disable=SC2086  # one id per word
    timeout 10 scancel $jobs 2>/dev/null || true
    # up to 10 s for the steps to be killed and their end to reach the database
    local tries
    for (( tries = 0; tries < 50; tries++ )); do
        [ -n "$(queued_jobs)" ] || break
        sleep 0.2
    done
}

cancel_jobs
stopped=()
stuck=()
for daemon in "${STOP_ORDER[@]}"; do
    entry=$(grep "^$daemon " "$STARTED" | tail -n1) || continue
    read -r _ pidfile exe <<<"$entry"
    if [ -s "$pidfile" ]; then
        rc=0
        start-stop-daemon --stop --quiet --pidfile "$pidfile" --exec "$exe" \
            --retry TERM/30/KILL/5 || rc=$?
        case $rc in
            0) stopped+=("$daemon") ;;
            1) ;;   # no such process: it had already gone
            *) stuck+=("$daemon"); continue ;;
        esac
    fi
    sed -i "/^$daemon /d" "$STARTED"
done

rm -f "$ENV_FILE"
[ -s "$STARTED" ] || rm -f "$STARTED"
echo "local-slurm: stopped ${stopped[*]:-nothing} ($(elapsed)s)"
if [ ${#stuck[@]} -gt 0 ]; then
    echo "local-slurm: error: ${stuck[*]} would not stop; see the pid files in $STARTED" >&2
    exit 1
fi

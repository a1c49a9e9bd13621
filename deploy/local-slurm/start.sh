#!/usr/bin/env bash
# Start a real single-node Slurm on this machine for outerloop's slurm and security
# suites and for CI (.ci/run): munged -> mariadbd -> slurmdbd -> slurmctld -> slurmd,
# with accounting, QOS "low", "normal" and "high" (pending jobs ordered by QOS; high
# preempts low by requeue) and four stand-in GPUs. No mock: Debian's own Slurm packages.
#
#   sudo bash deploy/local-slurm/start.sh
#   set -a; . /run/local-slurm/env; set +a       # OUTERLOOP_REAL_SLURM=1 and friends
#   python -m pytest tests/slurm
#   sudo bash deploy/local-slurm/stop.sh
#
# Needs root and Debian 12 (apt-get, dpkg, start-stop-daemon); made for machines and
# containers without systemd. Safe to run again at any time: a daemon that already
# answers is kept; one this script started is restarted only when the settings of its
# configuration changed (comments, blank lines and line order do not count). Daemons
# it starts are listed in /run/local-slurm/started ("name pidfile executable"), which
# is all stop.sh ever stops.
#
# stdout: exactly one line, "local-slurm: ready (...)", once every daemon answers and
# /run/local-slurm/env is written. Progress goes to stderr; a failure prints
# "local-slurm: error: ..." with the end of the daemon's log and exits 1.
#
# Environment (all optional):
#   LOCAL_SLURM_CLUSTER=outerloop   cluster name
#   LOCAL_SLURM_PARTITION=debug     the one partition
#   LOCAL_SLURM_NO_INSTALL=1        never run apt-get; fail if a package is missing
#   LOCAL_SLURM_SMOKE=1             also run one job and wait for COMPLETED in sacct
set -euo pipefail
exec </dev/null
umask 022
export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CLUSTER=${LOCAL_SLURM_CLUSTER:-outerloop}
PARTITION=${LOCAL_SLURM_PARTITION:-debug}
GPUS=4
RUN_DIR=/run/local-slurm
STARTED=$RUN_DIR/started
ENV_FILE=$RUN_DIR/env
LAUNCH_LOG=$RUN_DIR/launch.log
GPU_DIR=$RUN_DIR/gpus
CONF_DIR=/etc/slurm
DB_PASSWORD_FILE=$CONF_DIR/local-slurm-dbpass
JOBID_CONF=$CONF_DIR/local-slurm-jobid.conf
PACKAGES=(munge mariadb-server slurmdbd slurmctld slurmd slurm-client)

# The daemons, in start order: pid file and log of each. EXE (what /proc/PID/exe
# shows) is filled in once the packages are there.
DAEMONS=(munged mariadbd slurmdbd slurmctld slurmd)
declare -A PIDFILE=(
    [munged]=/run/munge/munged.pid [mariadbd]=/run/mysqld/mysqld.pid
    [slurmdbd]=/run/slurm/slurmdbd.pid [slurmctld]=/run/slurm/slurmctld.pid
    [slurmd]=/run/slurm/slurmd.pid)
declare -A LOG=(
    [munged]=/var/log/munge/munged.log [mariadbd]=/var/log/mysql/error.log
    [slurmdbd]=/var/log/slurm/slurmdbd.log [slurmctld]=/var/log/slurm/slurmctld.log
    [slurmd]=/var/log/slurm/slurmd.log)
declare -A EXE=()

# ------------------------------------------------------------------ small helpers
T0_US=${EPOCHREALTIME//[^0-9]/}
elapsed() {
    local us=$(( ${EPOCHREALTIME//[^0-9]/} - T0_US ))
    printf '%d.%d' $(( us / 1000000 )) $(( us % 1000000 / 100000 ))
}
say() { printf 'local-slurm %6ss  %s\n' "$(elapsed)" "$*" >&2; }

# fail MESSAGE [DAEMON]: the reason, the end of that daemon's log, exit 1.
fail() {
    printf 'local-slurm: error: %s\n' "$1" >&2
    local log
    for log in ${2:+"${LOG[$2]}"} "$LAUNCH_LOG"; do
        if [ -s "$log" ]; then
            printf -- '---- last lines of %s\n' "$log" >&2
            tail -n 20 "$log" >&2
        fi
    done
    exit 1
}

# alive DAEMON: the pid in its pid file is a live process running its executable.
# Never a name match: /run may outlive the processes, and pids get reused.
alive() {
    local file=${PIDFILE[$1]} pid
    [ -s "$file" ] || return 1
    pid=$(tr -dc '0-9' <"$file")
    [ -n "$pid" ] && [ "$(readlink -f "/proc/$pid/exe" 2>/dev/null)" = "${EXE[$1]}" ]
}

# died DAEMON: its pid file names a process that no longer runs its executable (a
# daemon that has not written its pid file yet has not died).
died() { [ -s "${PIDFILE[$1]}" ] && ! alive "$1"; }

# launch COMMAND...: start a daemon with stdin and stdout on /dev/null, stderr to
# $LAUNCH_LOG (what it says before its own log is open) and no other descriptor, so
# that no pipe or lock of whoever ran this script lives on in the daemon and keeps
# that caller waiting for end-of-file.
launch() {
    (
        for fd in /proc/self/fd/*; do
            fd=${fd##*/}
            [ "$fd" -le 2 ] || eval "exec $fd>&-"
        done
        exec "$@"
    ) </dev/null >/dev/null 2>>"$LAUNCH_LOG"
}

ours() { grep -q "^$1 " "$STARTED" 2>/dev/null; }

# remember DAEMON: list it in $STARTED so that stop.sh may stop it.
remember() {
    sed -i "/^$1 /d" "$STARTED"
    echo "$1 ${PIDFILE[$1]} ${EXE[$1]}" >>"$STARTED"
}

# wait_until SECONDS WHAT DAEMON|- COMMAND...: run COMMAND every 0.2 s until it
# succeeds. Gives up at once when DAEMON (unless "-") has died meanwhile.
wait_until() {
    local seconds=$1 what=$2 daemon=$3
    shift 3
    local deadline=$(( ${EPOCHREALTIME%[.,]*} + seconds ))
    until "$@" >/dev/null 2>&1; do
        if [ "$daemon" != - ] && died "$daemon"; then
            fail "$daemon exited while waiting for $what" "$daemon"
        fi
        [ "${EPOCHREALTIME%[.,]*}" -lt "$deadline" ] \
            || fail "no $what after ${seconds}s" "${daemon#-}"
        sleep 0.2
    done
}

# stop_daemon DAEMON: TERM, KILL after 30 s; only the pid in its file, only while
# that pid still runs the daemon's executable.
stop_daemon() {
    local rc=0
    start-stop-daemon --stop --quiet --pidfile "${PIDFILE[$1]}" --exec "${EXE[$1]}" \
        --retry TERM/30/KILL/5 || rc=$?
    # 0: stopped, 1: it had gone already; anything else: it is still there
    [ "$rc" -le 1 ] || fail "$1 (pid $(cat "${PIDFILE[$1]}")) would not stop" "$1"
}

# same_settings A B: both files hold the same settings, ignoring comments, blank
# lines, surrounding spaces and the order of lines.
settings_of() {
    sed -e 's/#.*//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' "$1" | grep -v '^$' | LC_ALL=C sort
}
same_settings() {
    [ -f "$2" ] && cmp -s <(settings_of "$1") <(settings_of "$2")
}

# place NEW DEST MODE OWNER: install NEW as DEST unless DEST already holds the same
# settings (then DEST is kept as it is, so whoever wrote it sees no change either).
CHANGED=()
place() {
    local new=$1 dest=$2 mode=$3 owner=$4
    if same_settings "$new" "$dest"; then
        rm -f "$new"
    else
        mv -f "$new" "$dest"
        CHANGED+=("$dest")
    fi
    chmod "$mode" "$dest"
    chown "$owner" "$dest"
}

changed() {
    local file
    for file in "${CHANGED[@]}"; do [ "$file" = "$1" ] && return 0; done
    return 1
}

# ------------------------------------------------------------------ steps
check_machine() {
    [ "$(id -u)" -eq 0 ] \
        || fail "must run as root (it installs packages and starts system daemons): sudo bash $0"
    local tool
    for tool in dpkg-query apt-get start-stop-daemon flock; do
        command -v "$tool" >/dev/null \
            || fail "$tool not found: this script needs Debian 12 (or a close relative)"
    done
    if [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ]; then
        say "note: systemd is running; the packages' own units may start daemons too" \
            "(this script is made for machines without systemd)"
    fi
}

install_packages() {
    local missing=() installed package
    installed=$(dpkg-query -W -f='${db:Status-Status} ${Package}\n' "${PACKAGES[@]}" 2>/dev/null) || true
    for package in "${PACKAGES[@]}"; do
        grep -Fqx "installed $package" <<<"$installed" || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    [ "${LOCAL_SLURM_NO_INSTALL:-0}" != 1 ] \
        || fail "packages missing: ${missing[*]} (LOCAL_SLURM_NO_INSTALL=1 forbids apt-get: install them or unset it)"
    say "installing ${missing[*]}"
    local apt_log=/var/log/local-slurm-apt.log
    export DEBIAN_FRONTEND=noninteractive
    # Without an init system invoke-rc.d refuses to start services, so installing
    # starts nothing behind our back.
    if ! { apt-get update -q && apt-get install -y -q --no-install-recommends \
            -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
            "${PACKAGES[@]}"; } >"$apt_log" 2>&1; then
        tail -n 30 "$apt_log" >&2
        fail "apt-get could not install ${missing[*]} (full output: $apt_log)"
    fi
    say "installed slurm $(dpkg-query -W -f='${Version}' slurmctld)"
}

find_executables() {
    local daemon
    # Debian ships slurmctld-wlm and slurmd-wlm behind /usr/sbin/slurmctld and
    # /usr/sbin/slurmd. /proc/PID/exe shows the -wlm file, so pid checks compare
    # with it, but the daemons are STARTED by the short names: Slurm picks its role
    # from argv[0], and slurmctld started as slurmctld-wlm crashes at start-up.
    for daemon in "${DAEMONS[@]}"; do
        EXE[$daemon]=$(readlink -f "/usr/sbin/$daemon")
        [ -x "${EXE[$daemon]}" ] || fail "/usr/sbin/$daemon is missing (reinstall its package)"
    done
}

munge_answers() { munge -n | unmunge; }

start_munged() {
    if munge_answers >/dev/null 2>&1; then say "munged answers"; return; fi
    mkdir -p /etc/munge /run/munge /var/lib/munge /var/log/munge
    [ -s /etc/munge/munge.key ] || head -c 1024 /dev/urandom >/etc/munge/munge.key
    chown munge:munge /etc/munge /etc/munge/munge.key /run/munge /var/lib/munge /var/log/munge
    chmod 0700 /etc/munge /var/log/munge
    chmod 0400 /etc/munge/munge.key
    chmod 0755 /run/munge
    rm -f "${PIDFILE[munged]}"
    launch start-stop-daemon --start --quiet --chuid munge:munge --pidfile "${PIDFILE[munged]}" \
        --exec "${EXE[munged]}" -- --force || fail "munged did not start" munged
    wait_until 20 "answer from munged" - munge_answers
    remember munged
    say "munged started"
}

db_answers() { mariadb-admin --protocol=socket -uroot ping; }

start_mariadbd() {
    if db_answers >/dev/null 2>&1; then
        say "mariadb answers"
    else
        mkdir -p /run/mysqld /var/log/mysql
        chown mysql:mysql /run/mysqld /var/log/mysql
        if [ ! -d /var/lib/mysql/mysql ]; then
            mariadb-install-db --user=mysql --datadir=/var/lib/mysql \
                --auth-root-authentication-method=socket \
                >/var/log/local-slurm-mariadb-install.log 2>&1 \
                || fail "mariadb-install-db failed (see /var/log/local-slurm-mariadb-install.log)"
        fi
        rm -f "${PIDFILE[mariadbd]}"
        # mariadbd stays in the foreground: start-stop-daemon detaches it. Unix socket
        # only; the lock wait and buffer pool are what slurmdbd asks for.
        launch start-stop-daemon --start --quiet --background --pidfile "${PIDFILE[mariadbd]}" \
            --exec "${EXE[mariadbd]}" -- --user=mysql --pid-file="${PIDFILE[mariadbd]}" \
            --socket=/run/mysqld/mysqld.sock --skip-networking \
            --log-error="${LOG[mariadbd]}" --innodb-buffer-pool-size=512M \
            --innodb-lock-wait-timeout=900 --max-allowed-packet=64M \
            || fail "mariadbd did not start" mariadbd
        wait_until 60 "answer from mariadb" - db_answers
        wait_until 10 "mariadb pid file" - test -s "${PIDFILE[mariadbd]}"
        remember mariadbd
        say "mariadb started"
    fi
    if [ ! -s "$DB_PASSWORD_FILE" ]; then
        install -m 0600 /dev/null "$DB_PASSWORD_FILE"
        head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' >"$DB_PASSWORD_FILE"
        echo >>"$DB_PASSWORD_FILE"
    fi
    DB_PASSWORD=$(tr -dc 'A-Za-z0-9' <"$DB_PASSWORD_FILE")
    mariadb --protocol=socket -uroot >/dev/null <<SQL || fail "could not set up the slurm database user" mariadbd
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASSWORD';
ALTER USER 'slurm'@'localhost' IDENTIFIED BY '$DB_PASSWORD';
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
FLUSH PRIVILEGES;
SQL
}

write_configs() {
    NODE=$(hostname -s)
    local hardware
    hardware=$(/usr/sbin/slurmd -C | head -n1) || fail "slurmd -C could not read this machine's hardware"
    # "NodeName=vm CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105"
    field() { tr ' ' '\n' <<<"$hardware" | sed -n "s/^$1=//p"; }
    CPUS=$(field CPUs)
    SOCKETS=$(field SocketsPerBoard)
    CORES=$(field CoresPerSocket)
    THREADS=$(field ThreadsPerCore)
    MEMORY_MB=$(field RealMemory)
    if [ -z "$CPUS" ] || [ -z "$MEMORY_MB" ]; then
        fail "slurmd -C printed no CPUs or RealMemory: $hardware"
    fi

    mkdir -p "$CONF_DIR" /var/lib/slurm/slurmctld /var/lib/slurm/slurmd /var/log/slurm /run/slurm
    chown slurm:slurm /var/lib/slurm /var/lib/slurm/slurmctld /var/log/slurm /run/slurm
    [ -f "$JOBID_CONF" ] || echo "FirstJobId=1" >"$JOBID_CONF"

    sed -e "s/@CLUSTER@/$CLUSTER/g" -e "s/@PARTITION@/$PARTITION/g" -e "s/@NODE@/$NODE/g" \
        -e "s/@CPUS@/$CPUS/g" -e "s/@SOCKETS@/$SOCKETS/g" -e "s/@CORES@/$CORES/g" \
        -e "s/@THREADS@/$THREADS/g" -e "s/@MEMORY_MB@/$MEMORY_MB/g" -e "s/@GPUS@/$GPUS/g" \
        "$HERE/slurm.conf.in" >"$CONF_DIR/.slurm.conf.new"
    place "$CONF_DIR/.slurm.conf.new" "$CONF_DIR/slurm.conf" 0644 root:root

    # Slurm drops a GPU that has no device file: each stand-in is a character
    # device equal to /dev/null, made afresh under /run.
    mkdir -p "$GPU_DIR"
    local i
    for (( i = 0; i < GPUS; i++ )); do
        [ -c "$GPU_DIR/gpu$i" ] || mknod -m 0666 "$GPU_DIR/gpu$i" c 1 3
    done
    echo "NodeName=$NODE Name=gpu File=$GPU_DIR/gpu[0-$(( GPUS - 1 ))]" >"$CONF_DIR/.gres.conf.new"
    place "$CONF_DIR/.gres.conf.new" "$CONF_DIR/gres.conf" 0644 root:root

    (umask 077; sed -e "s/@DB_PASSWORD@/$DB_PASSWORD/g" "$HERE/slurmdbd.conf.in" >"$CONF_DIR/.slurmdbd.conf.new")
    place "$CONF_DIR/.slurmdbd.conf.new" "$CONF_DIR/slurmdbd.conf" 0600 slurm:slurm

    [ ${#CHANGED[@]} -eq 0 ] || say "wrote ${CHANGED[*]} (node $NODE: $CPUS CPUs, $MEMORY_MB MB, $GPUS GPUs)"
}

# A running daemon whose settings changed is stopped now and started again below;
# one this script did not start is left to whoever started it.
restart_changed() {
    local daemon
    for daemon in slurmd slurmctld slurmdbd; do
        case $daemon in
            slurmdbd) changed "$CONF_DIR/slurmdbd.conf" || continue ;;
            *) changed "$CONF_DIR/slurm.conf" || changed "$CONF_DIR/gres.conf" || continue ;;
        esac
        alive "$daemon" || continue
        if ours "$daemon"; then
            say "settings changed: restarting $daemon"
            stop_daemon "$daemon"
        else
            say "warning: $daemon runs with its old settings and was not started by this" \
                "script; restart it to apply them"
        fi
    done
}

sacctmgr_q() { timeout 20 sacctmgr --immediate --noheader --parsable2 "$@"; }

start_slurmdbd() {
    if alive slurmdbd; then
        say "slurmdbd runs"
    else
        rm -f "${PIDFILE[slurmdbd]}"
        launch /usr/sbin/slurmdbd || fail "slurmdbd did not start" slurmdbd
        remember slurmdbd
        say "slurmdbd started"
    fi
    # its first start creates the database tables: a few seconds
    wait_until 90 "answer from slurmdbd" slurmdbd sacctmgr_q show cluster
}

# The cluster, QOS low/high and the associations jobs need. Reads each table once
# (sacctmgr takes ~0.3 s a call) and changes only what differs.
set_up_accounts() {
    sacctmgr_q show cluster format=cluster | grep -Fqx "$CLUSTER" \
        || sacctmgr_q add cluster "$CLUSTER" >/dev/null || fail "sacctmgr could not add cluster $CLUSTER" slurmdbd

    local qos_rows qos
    qos_rows=$(sacctmgr_q show qos format=name,priority,preempt,preemptmode) \
        || fail "sacctmgr could not list the QOS" slurmdbd
    for qos in low high; do
        grep -q "^$qos|" <<<"$qos_rows" \
            || sacctmgr_q add qos "$qos" >/dev/null || fail "sacctmgr could not add QOS $qos" slurmdbd
    done
    grep -Fqx 'normal|100||cluster' <<<"$qos_rows" \
        || sacctmgr_q modify qos where name=normal set Priority=100 >/dev/null \
        || fail "sacctmgr could not set QOS normal (Priority=100)" slurmdbd
    grep -Fqx 'low|10||requeue' <<<"$qos_rows" \
        || sacctmgr_q modify qos where name=low set Priority=10 PreemptMode=requeue >/dev/null \
        || fail "sacctmgr could not set QOS low (Priority=10 PreemptMode=requeue)" slurmdbd
    grep -Fqx 'high|1000|low|requeue' <<<"$qos_rows" \
        || sacctmgr_q modify qos where name=high set Priority=1000 Preempt=low PreemptMode=requeue >/dev/null \
        || fail "sacctmgr could not set QOS high (Priority=1000 Preempt=low PreemptMode=requeue)" slurmdbd

    # root, the user behind sudo and every local user (uid 1000-59999): account root,
    # QOS normal,low,high, default normal. Others: sacctmgr -i add user NAME account=root
    local assoc_rows users user granted
    assoc_rows=$(sacctmgr_q show assoc where cluster="$CLUSTER" format=user,qos) \
        || fail "sacctmgr could not list the associations" slurmdbd
    users=$( { echo root; echo "${SUDO_USER:-}"
               awk -F: '$3 >= 1000 && $3 < 60000 {print $1}' /etc/passwd; } | sort -u)
    for user in $users; do
        granted=$(awk -F'|' -v user="$user" '$1 == user {print $2; exit}' <<<"$assoc_rows")
        case ",$granted," in *,normal,*) case ",$granted," in *,low,*)
            case ",$granted," in *,high,*) continue ;; esac ;; esac ;; esac
        if { [ -n "$granted" ] || sacctmgr_q add user "$user" account=root cluster="$CLUSTER"; } \
           && sacctmgr_q modify user where name="$user" cluster="$CLUSTER" \
                  set qos=normal,low,high defaultqos=normal; then
            say "user $user may submit with QOS normal, low and high"
        elif [ "$user" = root ]; then
            fail "sacctmgr could not give root an association with QOS normal,low,high" slurmdbd
        else
            say "warning: sacctmgr could not give $user an association; $user cannot submit jobs"
        fi >/dev/null
    done
}

ctld_answers() { timeout 10 scontrol ping | grep -q 'is UP'; }

CTLD_STARTED=0
start_slurmctld() {
    if alive slurmctld; then
        say "slurmctld runs"
    else
        # After an unclean stop slurmctld may have lost its last jobs (it saves state
        # every few seconds); starting past the database's highest id keeps ids unique.
        local highest
        highest=$(sacct -a -X -D --noheader --parsable2 -o JobIDRaw -S 2000-01-01 -E now 2>/dev/null \
                  | tr -dc '0-9\n' | sort -n | tail -n1) || true
        echo "FirstJobId=$(( ${highest:-0} + 1 ))" >"$JOBID_CONF"
        rm -f "${PIDFILE[slurmctld]}"
        launch /usr/sbin/slurmctld -i || fail "slurmctld did not start" slurmctld
        remember slurmctld
        CTLD_STARTED=1
        say "slurmctld started (FirstJobId=$(( ${highest:-0} + 1 )))"
    fi
    wait_until 60 "answer from slurmctld" slurmctld ctld_answers
}

node_state() { sinfo --noheader -n "$NODE" -o '%T' 2>/dev/null | head -n1; }

start_slurmd() {
    if alive slurmd; then
        say "slurmd runs"
    else
        rm -f "${PIDFILE[slurmd]}"
        launch /usr/sbin/slurmd -N "$NODE" || fail "slurmd did not start" slurmd
        remember slurmd
        say "slurmd started"
    fi
    # A node left down or drained by an earlier run is resumed, once.
    local deadline=$(( ${EPOCHREALTIME%[.,]*} + 60 )) resumed=0 state daemon
    while :; do
        state=$(node_state)
        case $state in idle|mixed|allocated|completing) break ;; esac
        for daemon in slurmd slurmctld; do
            if died "$daemon"; then fail "$daemon exited while node $NODE was ${state:-unknown}" "$daemon"; fi
        done
        case $state in
            down*|drain*|fail*|inval*)
                if [ $resumed -eq 0 ]; then
                    sleep 2
                    scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true
                    resumed=1
                    say "node $NODE was $state: resumed it"
                fi ;;
        esac
        [ "${EPOCHREALTIME%[.,]*}" -lt "$deadline" ] \
            || fail "node $NODE is ${state:-unknown} after 60s (scontrol show node $NODE says why)" slurmd
        sleep 0.2
    done
    say "node $NODE is $state"
}

accounting_answers() {
    [ -n "$(sacctmgr_q show cluster where name="$CLUSTER" format=controlhost)" ] \
        && sacct --noheader -X -a -S now-1minutes -o JobID
}

finish_accounting() {
    # Jobs the database still shows running although the controller lost them
    # ("runaway" after an unclean stop) are closed, as Slurm's own tool does.
    if [ "$CTLD_STARTED" -eq 1 ]; then
        timeout 30 sacctmgr --immediate show runawayjobs >/dev/null 2>&1 || true
    fi
    # sacct answers once slurmctld has registered with slurmdbd
    wait_until 60 "answer from sacct" slurmdbd accounting_answers
}

smoke_job() {
    [ "${LOCAL_SLURM_SMOKE:-0}" = 1 ] || return 0
    local job
    job=$(sbatch --parsable --job-name=local-slurm-smoke --output=/dev/null --wrap=true) \
        || fail "sbatch refused the smoke job" slurmctld
    completed() { sacct -j "$job" --noheader --parsable2 -X -o State | grep -qx COMPLETED; }
    wait_until 60 "COMPLETED smoke job $job in sacct" slurmctld completed
    say "smoke job $job COMPLETED"
}

write_env() {
    # written aside and renamed: a reader never sees half a file
    cat >"$ENV_FILE.new" <<EOF
OUTERLOOP_REAL_SLURM=1
OUTERLOOP_SLURM_CLUSTER=$CLUSTER
OUTERLOOP_SLURM_PARTITION=$PARTITION
OUTERLOOP_SLURM_NODE=$NODE
OUTERLOOP_SLURM_QOS_LOW=low
OUTERLOOP_SLURM_QOS_HIGH=high
OUTERLOOP_SLURM_GPUS=$GPUS
EOF
    mv -f "$ENV_FILE.new" "$ENV_FILE"
}

main() {
    check_machine
    mkdir -p "$RUN_DIR"
    # one start or stop at a time (launch closes this descriptor for the daemons)
    exec 9>"$RUN_DIR/lock"
    flock -w 300 9 || fail "another start.sh or stop.sh has held $RUN_DIR/lock for 300s"
    touch "$STARTED"
    : >"$LAUNCH_LOG"

    install_packages
    find_executables
    start_munged
    start_mariadbd
    write_configs
    restart_changed
    start_slurmdbd
    set_up_accounts
    start_slurmctld
    start_slurmd
    finish_accounting
    smoke_job
    write_env
    printf 'local-slurm: ready (slurm %s, cluster %s, partition %s, node %s: %s CPUs, %s MB, %s GPUs; %ss; env in %s)\n' \
        "$(sinfo --version | awk '{print $2}')" "$CLUSTER" "$PARTITION" "$NODE" "$CPUS" \
        "$MEMORY_MB" "$GPUS" "$(elapsed)" "$ENV_FILE"
}

# Sourced (tests read its helpers): define only. Run: start.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi

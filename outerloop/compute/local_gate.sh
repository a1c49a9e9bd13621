# The gate of one waiting local job: bash, builtins only while it waits (no fork per poll).
#
#   bash -p local_gate.sh JOBS_DIR JOB_ID PYTHON BEGIN_S SINGLETON_NAME TERMINAL_STATES \
#                      READ_FD WRITE_FD GRACE_S GPUS GPU_LOCK_KEYS [DEPENDENCY_ID...]
#
# Started by LocalCompute.submit (local_gate.py builds the arguments) in place of the
# Python runner. It waits while BEGIN_S (epoch seconds, 0 for none) is in the future,
# while an after_any dependency has not ended, and, when SINGLETON_NAME is set, while an
# older job of that name has not ended ("ended" as LocalCompute.observe says it: no
# state.json, a terminal state, or a runner that is gone), and while fewer than GPUS
# stand-in GPUs are free (GPU_LOCK_KEYS: how /proc/locks names each id's lock file,
# local_gpus.DevicePool.lock_keys). It writes what it waits for (BeginTime, Dependency,
# Resources) in gate.reason, which observers read until the runner writes the record
# (state.json has one writer at a time: the gate never writes it). Then it execs the runner
# (`PYTHON -m outerloop.compute.runner_main`) in this same process, so the pid and identity in
# runner.pid stay the runner's. A cancel request (cancel, cancel.<k>) or a SIGTERM/
# SIGINT (passed on as --signalled: node_fail unless a cancel was asked) also hands
# over at once: the runner decides, as it always did. The runner re-checks every wait
# itself, so a gate that hands over early costs an interpreter, never correctness.
# READ_FD/WRITE_FD are the two ends of one pipe: `read -t` on it is a sleep that needs
# no sleep process.

shopt -s extglob
jobs=$1 id=$2 py=$3 begin=$4 solo=$5 terminal=" $6 " rfd=$7 wfd=$8 grace=$9
gpus=${10} gpu_keys=(${11})
shift 11
said=
deps=("$@")
signalled=
trap 'signalled=1' TERM INT
trap '' HUP
boot=
IFS= read -r boot 2>/dev/null </proc/sys/kernel/random/boot_id
declare -A ended=()
delays=(0.05 0.08 0.11 0.17 0.25)  # a job starts <= 0.25 s after it may (polls are builtins)

alive() { # PID IDENTITY: that very process is alive (not a zombie, not a reused pid)
    local stat=
    local -a f
    if [[ ! -e /proc/self/stat ]]; then
        kill -0 "$1" 2>/dev/null
        return
    fi
    IFS= read -r stat 2>/dev/null <"/proc/$1/stat"
    [[ -n $stat ]] || return 1
    f=(${stat##*) })
    [[ ${f[0]} != [ZX] ]] || return 1
    [[ -z $2 || $2 == "$boot:${f[19]}" ]]
}

over() { # ID: the job has ended (observers say so, or will once they look)
    local dir=$jobs/$1 json= state pid ident submitted
    [[ -n ${ended[$1]} ]] && return 0
    if [[ -e $dir/state.json ]]; then
        IFS= read -r -d '' json 2>/dev/null <"$dir/state.json"
    fi
    if [[ -z $json ]]; then
        ended[$1]=1
        return 0
    fi
    state=${json#*\"state\":\"}
    state=${state%%\"*}
    if [[ $terminal == *" $state "* ]]; then
        ended[$1]=1
        return 0
    fi
    pid=${json#*\"runner_pid\":}
    pid=${pid%%[,\}]*}
    if [[ $pid == +([0-9]) ]]; then
        ident=${json#*\"runner_identity\":}
        ident=${ident%%[,\}]*}
        ident=${ident//\"/}
        [[ $ident == null ]] && ident=
    elif ! IFS=' ' read -r pid ident 2>/dev/null <"$dir/runner.pid"; then
        submitted=${json#*\"submitted_at\":}
        submitted=${submitted%%[.,\}eE]*}
        (( now - submitted < grace )) && return 1
        ended[$1]=1
        return 0
    fi
    alive "$pid" "$ident" && return 1
    ended[$1]=1
    return 0
}

say() { # REASON: what the job waits for, for observers (see local.py's current_record)
    [[ $1 == "$said" ]] && return
    said=$1
    printf '%s\n' "$1" 2>/dev/null >"$jobs/$id/gate.reason"
}

free() { # at least GPUS stand-in GPUs are free: no lock on their files in /proc/locks
    local line key
    local -A held=()
    (( gpus > 0 )) || return 0
    [[ -r /proc/locks ]] || return 0
    while IFS= read -r line; do
        for key in "${gpu_keys[@]}"; do
            [[ $line == *" $key "* ]] && held[$key]=1
        done
    done </proc/locks
    (( ${#gpu_keys[@]} - ${#held[@]} >= gpus ))
}

waited() { # the job's dependencies, or an older job of its singleton name, still run
    local dep name
    for dep in "${deps[@]}"; do
        over "$dep" || return 0
    done
    [[ -n $solo ]] || return 1
    for name in "$jobs/names/$solo"/*; do
        name=${name##*/}
        [[ $name == +([0-9]) ]] && (( 10#$name < 10#$id )) || continue
        over "$name" || return 0
    done
    return 1
}

ready() { # the job may start now; else say why not
    printf -v now '%(%s)T' -1
    if (( now < begin )); then
        say BeginTime
    elif waited; then
        say Dependency
    elif ! free; then
        say Resources
    else
        return 0
    fi
    return 1
}

asked() { # a cancel request for the job or one of its tasks
    local file
    [[ -e $jobs/$id/cancel ]] && return 0
    for file in "$jobs/$id"/cancel.*; do
        [[ -e $file ]] && return 0
    done
    return 1
}

step=0
while [[ -z $signalled ]] && ! asked && ! ready; do
    read -r -t "${delays[step]}" -u "$rfd" _
    (( step < ${#delays[@]} - 1 )) && step=$(( step + 1 ))
done
exec {rfd}<&- {wfd}>&-
if [[ -n $signalled ]]; then
    exec "$py" -m outerloop.compute.runner_main --jobs-dir "$jobs" --signalled "$id"
fi
exec "$py" -m outerloop.compute.runner_main --jobs-dir "$jobs" "$id"

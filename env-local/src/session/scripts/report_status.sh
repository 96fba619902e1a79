# The status record, after the command (init.sh puts it in the c0 branch
# and the general path). First the stamp, `<id> <nonce>`, which Rust wrote
# after the request line and which the command could not see; then the
# background jobs still running, a line each; then the status in one write
# (bash flushes at each newline, and each write wakes Rust). Both
# redirections on one group: with 0 and 1 free, each file opens straight
# onto its descriptor, and bash needs no dup2 and no close to put it there
# (3 system calls a call). No `2>/dev/null`: the shell's stderr is closed.
{
  if [[ -z ${TMOUT-} ]]; then
    builtin read -r -N @STAMP_WIDTH@ __bt_stamp
  else
    TMOUT= builtin read -r -N @STAMP_WIDTH@ __bt_stamp
  fi || [[ ${__bt_broken:?bashtool: the session driver cannot read} ]]
  builtin jobs -rp
  builtin printf 'S %s %s P%s\0' "$__bt_stamp" "$__bt_status" "$PWD"
} <@DIR@/driver >>@DIR@/control || [[ ${__bt_broken:?bashtool: the session driver cannot write} ]]

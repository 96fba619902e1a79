# bashtool session driver: sourced by the long-lived bash behind a Session.
#
# For each call Rust writes the command to a file, and a call script that
# runs it (see driver.rs):
#
#   __bt_pre 'DIR' && VAR='x' BASHTOOL_RUN_ID='id' source 'CMD' </dev/null >|'OUT' 2>|'ERR' 3>&-; __bt_post $? ID
#
# and then one short line on the shell's stdin: `builtin . "$__bt_call"`.
# (bash reads a script from a pipe one byte per read(2), so that a command
# reading stdin would not lose input; a sourced file is read at once.)
#
# The command is `source`d at top level (not inside a function), so that
# `declare`, `local` errors, `return` and positional parameters behave as at
# a prompt, and nothing forks. The redirections on `source` are undone by
# bash when it returns, so a command that runs `exec >/dev/null` or
# `exec 3>&-` does not take the shell's own descriptors with it. fd 3 is the
# control pipe to Rust: statuses never travel on the command's output, so no
# output can be mistaken for one.
#
# Everything here must survive the user's `set -euo pipefail`, `set -x` and
# functions or aliases with ordinary names: builtins are called through
# `builtin`, no command may fail unguarded, and nothing forks.

__bt_pre() {
  __bt_back=
  if [[ -n ${1-} ]]; then
    __bt_back=$PWD
    builtin cd -- "$1" 2>/dev/null || return 1
  fi
  return 0
}

__bt_post() {
  # `set -e` and `set -u` apply to the call that sets them. Carried over,
  # the next failing command or unset variable would end the shell, as the
  # next typo would close a terminal: agents write `set -euo pipefail` at
  # the top of scripts all the time. (A `set -e` command whose last status
  # is non-zero still ends the shell; the session restarts it.)
  builtin set +o errexit +o nounset
  if [[ -n ${__bt_back-} ]]; then
    builtin cd -- "$__bt_back" 2>/dev/null || :
    __bt_back=
  fi
  # Status first, so that the call returns before the snapshot is written.
  {
    builtin printf 'S %s %s\n' "$2" "$1"
    builtin jobs -rp
    builtin printf 'P%s\0' "$PWD"
  } >&3 2>/dev/null || :
  __bt_save
}

# Writes the state of the shell, as a script that restores it, into the
# next of two slots (a slot cut short by a kill never hides the other one).
# Builtins and redirections of the current shell only: no fork.
__bt_save() {
  __bt_seq=$((__bt_seq + 1))
  {
    builtin declare -p
    builtin declare -f
    builtin alias -p
    builtin printf 'builtin cd -- %q\n' "$PWD"
    builtin umask -p
    builtin printf '__bt_saved_shellopts=%q\n__bt_saved_bashopts=%q\n' "$SHELLOPTS" "$BASHOPTS"
    builtin printf '# bashtool snapshot complete %s\n' "$__bt_seq"
  } >|"$__bt_state/snapshot.$((__bt_seq % 2))" 2>/dev/null || :
}

# Restores `set -o` and `shopt` options saved by __bt_save. Applied last,
# so that a restored `set -e` cannot end the restore early.
__bt_apply_options() {
  local __bt_option IFS=:
  for __bt_option in $SHELLOPTS; do
    [[ :$__bt_saved_shellopts: == *:"$__bt_option":* ]] || builtin set +o "$__bt_option" 2>/dev/null || :
  done
  for __bt_option in $__bt_saved_shellopts; do
    case $__bt_option in
      errexit | nounset) ;;
      *) builtin set -o "$__bt_option" 2>/dev/null || : ;;
    esac
  done
  for __bt_option in $BASHOPTS; do
    [[ :$__bt_saved_bashopts: == *:"$__bt_option":* ]] || builtin shopt -u "$__bt_option" 2>/dev/null || :
  done
  for __bt_option in $__bt_saved_bashopts; do
    builtin shopt -s "$__bt_option" 2>/dev/null || :
  done
}

# $1: directory of the snapshot slots; $2: sequence number to continue from.
__bt_init() {
  __bt_state=$1
  __bt_call=$1/call.sh
  __bt_seq=$2
  __bt_back=
  builtin trap '__bt_save' EXIT
  if [[ -n ${__bt_saved_shellopts-} ]]; then
    __bt_apply_options
  fi
  __bt_saved_shellopts=
  __bt_saved_bashopts=
  builtin printf 'R\0' >&3 2>/dev/null || :
}

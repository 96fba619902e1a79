# bashtool session: sourced once when a shell starts, after the snapshot
# (if any) was restored; $__bt_dir and $__bt_seq are set. See driver.rs.
#
# Two small functions run around every command. They are functions (parsed
# once: sourcing a script per call costs more) but few and short, because
# the snapshot's `declare -f` lists them, and bash writes every line of that
# output with its own write(2).

# After each command: $1 is its status, $__bt_id the call.
#
# `set -e` and `set -u` apply to the call that sets them. Carried over, the
# next failing command or unset variable would end the shell, as the next
# typo would close a terminal: agents write `set -euo pipefail` at the top of
# scripts all the time. (A `set -e` command whose last status is non-zero
# still ends the shell; the session restarts it.) The status goes out first,
# so that the call returns before the snapshot is written.
__bt_post() {
  builtin set +o errexit +o nounset
  [[ -z $__bt_back ]] || { builtin cd -- "$__bt_back" 2>/dev/null; __bt_back=; }
  { builtin printf 'S %s %s\n' "$__bt_id" "$1"; builtin jobs -rp; builtin printf 'P%s\0' "$PWD"; } >&3 2>/dev/null
  __bt_save
}

# Writes the state of the shell, as a script that restores it, into the next
# of two slots (a slot cut short by a kill never hides the other one).
# Builtins and redirections of the current shell only: no fork.
__bt_save() {
  __bt_seq=$((__bt_seq + 1))
  { builtin declare -p; builtin declare -f; builtin alias -p; builtin printf 'builtin cd -- %q\n' "$PWD"; builtin umask -p; builtin printf '__bt_saved_shellopts=%q\n__bt_saved_bashopts=%q\n# bashtool snapshot complete %s\n' "$SHELLOPTS" "$BASHOPTS" "$__bt_seq"; } >|"$__bt_dir/snapshot.$((__bt_seq % 2))" 2>/dev/null
}

# The rest runs once. It re-arms the EXIT trap (so that `exit`, `set -e` and
# SIGTERM save the state the shell reached) and applies the saved options
# last, so that no restored option can cut the restore short; `set -e` and
# `set -u` are not restored (see __bt_post). Not a function, so no `local`;
# the option lists are walked with parameter expansion, not IFS.
builtin unset -f __bt_pre __bt_apply_options __bt_init 2>/dev/null || :
__bt_back=
builtin trap '__bt_save' EXIT
if [[ -n ${__bt_saved_shellopts-} ]]; then
  __bt_rest=$SHELLOPTS:
  while [[ -n $__bt_rest ]]; do
    __bt_option=${__bt_rest%%:*}
    __bt_rest=${__bt_rest#*:}
    [[ :$__bt_saved_shellopts: == *:"$__bt_option":* ]] || builtin set +o "$__bt_option" 2>/dev/null || :
  done
  __bt_rest=$__bt_saved_shellopts:
  while [[ -n $__bt_rest ]]; do
    __bt_option=${__bt_rest%%:*}
    __bt_rest=${__bt_rest#*:}
    case $__bt_option in
      errexit | nounset | '') ;;
      *) builtin set -o "$__bt_option" 2>/dev/null || : ;;
    esac
  done
  __bt_rest=$BASHOPTS:
  while [[ -n $__bt_rest ]]; do
    __bt_option=${__bt_rest%%:*}
    __bt_rest=${__bt_rest#*:}
    [[ :$__bt_saved_bashopts: == *:"$__bt_option":* ]] || builtin shopt -u "$__bt_option" 2>/dev/null || :
  done
  __bt_rest=$__bt_saved_bashopts:
  while [[ -n $__bt_rest ]]; do
    __bt_option=${__bt_rest%%:*}
    __bt_rest=${__bt_rest#*:}
    [[ -z $__bt_option ]] || builtin shopt -s "$__bt_option" 2>/dev/null || :
  done
fi
builtin unset __bt_rest __bt_option __bt_saved_shellopts __bt_saved_bashopts
builtin printf 'R\0' >&3 2>/dev/null || :
